package dev.idempotency.spring.boot.web;

import dev.idempotency.core.outbox.OutboxWriter;
import java.net.URI;
import java.util.Map;
import java.util.regex.Pattern;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.security.web.csrf.CsrfFilter;
import org.springframework.security.web.csrf.HttpSessionCsrfTokenRepository;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * A small application on the starter, as a user writes one: {@code POST /orders} (keyed by
 * {@code idempotency.http.paths}) writes a row with JdbcTemplate and publishes an event through the
 * {@link OutboxWriter}; {@code POST /refunds} is keyed by its annotation. Its tests create the
 * {@code orders} table in their schema.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(ShopApplication.ShopController.class)
public class ShopApplication {

    /** What the properties cannot say: a path pattern. */
    @Bean
    IdempotentHttpConfigCustomizer checkoutNeedsAKey() {
        return http -> http.pathPatterns(Pattern.compile("/carts/[^/]+/checkout"));
    }

    /**
     * Spring Security's CSRF filter, as its filter chain would run it (tokens in the session), with
     * {@code --shop.csrf-filter=true}: for the console's test, without the rest of Spring Security.
     */
    @Bean
    @ConditionalOnProperty("shop.csrf-filter")
    FilterRegistrationBean<CsrfFilter> csrfFilter() {
        FilterRegistrationBean<CsrfFilter> registration = new FilterRegistrationBean<>(
                new CsrfFilter(new HttpSessionCsrfTokenRepository()));
        registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
        return registration;
    }

    /** The table the controller writes, for a test schema's {@code afterMigration}. */
    public static final String ORDERS_TABLE = "CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL, "
            + "request_key text NOT NULL)";

    @RestController
    static class ShopController {
        private final JdbcTemplate jdbc;
        private final OutboxWriter outbox;
        private final IdempotentRequest call;

        ShopController(JdbcTemplate jdbc, OutboxWriter outbox, IdempotentRequest call) {
            this.jdbc = jdbc;
            this.outbox = outbox;
            this.call = call;
        }

        /**
         * One order per key. The item {@code declined} is a business outcome (402, stored when declared);
         * {@code slow} takes a second; {@code X-Fail-After-Write: true} throws after every write.
         */
        @PostMapping("/orders")
        ResponseEntity<Map<String, Object>> order(@RequestBody Map<String, Object> order,
                                                  @RequestHeader(name = "X-Fail-After-Write", required = false) String fail)
                throws InterruptedException {
            String item = String.valueOf(order.get("item"));
            if (item.equals("declined")) {
                return ResponseEntity.status(402).body(Map.of("declined", item));
            }
            if (item.equals("slow")) {
                Thread.sleep(1000); // time itself: past KeyedRequestsTest's 200 ms wait budget
            }
            Long id = jdbc.queryForObject("INSERT INTO orders (item, request_key) VALUES (?, ?) RETURNING id", Long.class,
                    item, call.key());
            outbox.publish("orders", String.valueOf(id), Map.of("orderId", id, "item", item));
            if ("true".equals(fail)) {
                throw new IllegalStateException("failing after the writes, as asked");
            }
            return ResponseEntity.created(URI.create("/orders/" + id)).body(Map.of("id", id, "key", call.key()));
        }

        @GetMapping("/orders")
        Map<String, Object> orders() {
            return Map.of("count", jdbc.queryForObject("SELECT count(*) FROM orders", Long.class));
        }

        /** Keyed by the path pattern {@link #checkoutNeedsAKey()} adds. */
        @PostMapping("/carts/{cart}/checkout")
        ResponseEntity<Map<String, Object>> checkout(@PathVariable("cart") String cart) {
            return ResponseEntity.status(201).body(Map.of("cart", cart, "key", call.key()));
        }

        @IdempotentEndpoint
        @PostMapping("/refunds")
        Map<String, Object> refund(@RequestBody Map<String, Object> refund) {
            return Map.of("refunded", String.valueOf(refund.get("order")), "key", call.key());
        }
    }
}

package dev.idempotency.spring.boot.docs;

import dev.idempotency.core.outbox.OutboxWriter;
import dev.idempotency.spring.boot.web.IdempotentRequest;
import java.net.URI;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** docs/spring-boot.md's controller, verbatim but for its package: it must work when pasted. */
@RestController
public class OrdersController {
    private final JdbcTemplate jdbc;
    private final OutboxWriter outbox;
    private final IdempotentRequest request;

    public OrdersController(JdbcTemplate jdbc, OutboxWriter outbox, IdempotentRequest request) {
        this.jdbc = jdbc;
        this.outbox = outbox;
        this.request = request;
    }

    public record NewOrder(String item, int quantity) {
    }

    // Runs once per Idempotency-Key: the row, the event, the key and the stored response commit together.
    @PostMapping("/orders")
    public ResponseEntity<Map<String, Object>> create(@RequestBody NewOrder order) {
        Long id = jdbc.queryForObject("INSERT INTO orders (item, quantity) VALUES (?, ?) RETURNING id",
                Long.class, order.item(), order.quantity());
        outbox.publish("orders.created", String.valueOf(id), Map.of("orderId", id, "item", order.item()));
        return ResponseEntity.created(URI.create("/orders/" + id))
                .body(Map.of("id", id, "idempotencyKey", request.key()));
    }
}

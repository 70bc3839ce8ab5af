package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.spring.boot.RelayLifecycle;
import dev.idempotency.testing.MigratedSchema;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The relay as a bean of a running application: it publishes what a keyed request committed,
 * Actuator reports its health over HTTP, and closing the application stops it gracefully.
 */
class RelayOverHttpTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE)
            .afterMigration(ShopApplication.ORDERS_TABLE).build();

    @Test
    void theRelayPublishesACommittedOrderReportsItsHealthAndStopsWithTheApplication() throws Exception {
        RunningApplication shop = RunningApplication.start(ShopApplication.class, db, "--idempotency.http.paths=/orders",
                "--spring.flyway.enabled=false", "--idempotency.relay.enabled=true", "--idempotency.relay.publisher=log",
                "--idempotency.relay.partitions=4", "--idempotency.relay.idle-poll-max=5s",
                "--management.endpoints.web.exposure.include=health", "--management.endpoint.health.show-details=always");
        String instance;
        try {
            RelayLifecycle relay = shop.context().getBean(RelayLifecycle.class);
            instance = relay.relay().orElseThrow().instanceId();
            long start = System.nanoTime();
            assertThat(shop.post("/orders", "{\"item\":\"book\"}", UUID.randomUUID().toString()).statusCode())
                    .isEqualTo(201);
            await(() -> shop.count("SELECT count(*) FROM outbox_event_states WHERE status = 'published'") == 1);
            // Woken by the commit, not by its 5 s idle poll.
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(4));

            HttpResponse<String> health = shop.send(shop.request("/actuator/health/outboxRelay").GET());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"status\":\"UP\"").contains("\"instanceId\":\"" + instance + "\"")
                    .contains("\"pendingEvents\":0").contains("\"deadLetters\":0");
        } finally {
            shop.close();
        }
        // Stopped gracefully: it deregistered.
        assertThat(new JdbcTemplate(db.dataSource()).queryForObject(
                "SELECT count(*) FROM outbox_relay_instances WHERE instance_id = ?", Integer.class, instance)).isZero();
    }

    private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(20);
        }
    }
}

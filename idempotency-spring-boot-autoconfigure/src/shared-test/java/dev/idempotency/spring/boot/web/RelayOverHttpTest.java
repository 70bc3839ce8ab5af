package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.spring.boot.RelayLifecycle;
import dev.idempotency.testing.Await;
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
    static final RunningApplication shop = RunningApplication.shop("--idempotency.relay.enabled=true",
            "--idempotency.relay.publisher=log", "--idempotency.relay.partitions=4",
            "--idempotency.relay.idle-poll-max=5s", "--management.endpoints.web.exposure.include=health",
            "--management.endpoint.health.show-details=always");

    @Test
    void theRelayPublishesACommittedOrderReportsItsHealthAndStopsWithTheApplication() throws Exception {
        RelayLifecycle relay = shop.context().getBean(RelayLifecycle.class);
        String instance = relay.relay().orElseThrow().instanceId();
        long start = System.nanoTime();
        assertThat(shop.post("/orders", "{\"item\":\"book\"}", UUID.randomUUID().toString()).statusCode()).isEqualTo(201);
        Await.until("the event published", () -> shop.count("SELECT count(*) FROM outbox_event_states WHERE status = 'published'") == 1);
        // Woken by the commit, not by its 5 s idle poll.
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(4));

        HttpResponse<String> health = shop.send(shop.request("/actuator/health/outboxRelay").GET());
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"").contains("\"instanceId\":\"" + instance + "\"")
                .contains("\"pendingEvents\":0").contains("\"deadLetters\":0");

        shop.close();
        // Stopped gracefully: it deregistered.
        assertThat(relay.isRunning()).isFalse();
        assertThat(new JdbcTemplate(shop.schema().dataSource()).queryForObject(
                "SELECT count(*) FROM outbox_relay_instances WHERE instance_id = ?", Integer.class, instance)).isZero();
    }
}

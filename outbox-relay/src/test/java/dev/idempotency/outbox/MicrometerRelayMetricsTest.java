package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.outbox.metrics.micrometer.MicrometerRelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The relay's metrics on a registry an embedding application owns, as the relay process uses them. */
@Timeout(60)
class MicrometerRelayMetricsTest {
    private OutboxFixture outbox;

    @BeforeEach
    void setUp() {
        outbox = OutboxFixture.create("relay_micrometer");
    }

    @AfterEach
    void tearDown() {
        outbox.close();
    }

    @Test
    void aRelayWhoseOldestPendingEventOnlyAgesShowsAsStalledUntilItPublishesAgain() throws Exception {
        MeterRegistry registry = new SimpleMeterRegistry();
        MicrometerRelayMetrics metrics = MicrometerRelayMetrics.builder(registry)
                .backlog(OutboxBacklog.builder(outbox.dataSource()).schema(outbox.schema()).build())
                .build();
        RecordingPublisher broker = new RecordingPublisher("a", new PublicationLog()).down(true);
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, broker).config(outbox.config("a").build()).listener(metrics)
                     .build()) {
            relay.start();
            List<Long> ids = outbox.insertMany("t", "orders", "k", 3);
            assertTrue(metrics.refresh());
            Thread.sleep(1_500); // time itself: the stall the gauge must show
            assertTrue(metrics.refresh());

            assertTrue(metrics.stalledFor().compareTo(Duration.ofMillis(1_400)) >= 0, metrics.stalledFor().toString());
            assertTrue(registry.get("outbox.oldest.pending.stalled.seconds").gauge().value() >= 1.4);

            broker.down(false);
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(30));
            assertTrue(metrics.refresh());
            assertEquals(Duration.ZERO, metrics.stalledFor());
            assertEquals(0.0, registry.get("outbox.oldest.pending.stalled.seconds").gauge().value());
        }
    }

    @Test
    void countsPublicationsFailuresAndDeadLettersAndReadsTheOutboxStateOnRefresh() {
        MeterRegistry registry = new SimpleMeterRegistry();
        MicrometerRelayMetrics metrics = MicrometerRelayMetrics.builder(registry)
                .backlog(OutboxBacklog.builder(outbox.dataSource()).schema(outbox.schema()).build())
                .deadLetters(OutboxDeadLetters.builder(outbox.dataSource()).schema(outbox.schema()).build())
                .build();
        List<Long> ids = outbox.insertMany("t", "orders", "k", 5);
        long flaky = outbox.insert("t", "orders", "flaky", "{}");
        long rejected = outbox.insert("t", "orders", "rejected", "{}");
        assertTrue(metrics.refresh());
        assertTrue(metrics.freshWithin(Duration.ofMinutes(1)));
        assertEquals(7.0, registry.get("outbox.backlog.events").gauge().value());

        RecordingPublisher publisher = new RecordingPublisher("a", new PublicationLog())
                .failing(e -> e.id() == flaky && e.attempt() == 1)
                .rejecting(e -> e.id() == rejected);
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").build()).listener(metrics)
                     .build()) {
            relay.start();
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(30));
            outbox.awaitStatus(List.of(flaky), "published", Duration.ofSeconds(30));
            outbox.awaitStatus(List.of(rejected), "dead", Duration.ofSeconds(30));
        }
        assertTrue(metrics.refresh());

        assertEquals(6.0, registry.get("outbox.events.published").counter().count());
        assertEquals(1.0, registry.get("outbox.publish.failures").counter().count());
        assertEquals(1.0, registry.get("outbox.events.dead.lettered").counter().count());
        assertEquals(6, registry.get("outbox.commit.to.publish").timer().count());
        assertTrue(registry.get("outbox.commit.to.publish").timer().totalTime(TimeUnit.NANOSECONDS) > 0);
        assertEquals(0.0, registry.get("outbox.backlog.events").gauge().value());
        assertEquals(0.0, registry.get("outbox.oldest.pending.age.seconds").gauge().value());
        assertEquals(1.0, registry.get("outbox.dead.letters").gauge().value());
    }

    @Test
    void tagsTellTwoBindingsInOneRegistryApartAndGaugesComeOnlyWithTheirSource() {
        MeterRegistry registry = new SimpleMeterRegistry();
        MicrometerRelayMetrics payments = MicrometerRelayMetrics.builder(registry).tags(Tags.of("outbox", "payments")).build();
        MicrometerRelayMetrics orders = MicrometerRelayMetrics.builder(registry).tags(Tags.of("outbox", "orders")).build();

        payments.deadLettered(1, "rejected");
        payments.deadLettered(2, "rejected");
        orders.deadLettered(3, "rejected");

        assertEquals(2.0, registry.get("outbox.events.dead.lettered").tag("outbox", "payments").counter().count());
        assertEquals(1.0, registry.get("outbox.events.dead.lettered").tag("outbox", "orders").counter().count());
        assertNull(registry.find("outbox.backlog.events").gauge(), "no backlog given, no backlog gauge");
        assertNull(registry.find("outbox.dead.letters").gauge(), "no dead letters given, no dead-letter gauge");
        assertTrue(payments.refresh(), "nothing to read is a successful refresh");
    }
}

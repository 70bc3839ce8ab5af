package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.publisher.log.LoggingPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * Stored results, failures and payloads may hold personal data, so the library never logs them at
 * INFO or above: a workload whose results, business failures, callback exceptions, payloads and
 * headers all carry a unique marker runs through the executor, lease mode, the consumer, the
 * sweeper and a relay (with the log publisher and an undecodable row that is dead-lettered), and no
 * INFO-or-higher event of a dev.idempotency logger contains the marker.
 */
@Timeout(120)
class LogCaptureTest {

    @Test
    void noInfoOrHigherLogLineOfTheLibraryCarriesAResultFailureOrPayload() throws Exception {
        String marker = "PERSONAL-" + UUID.randomUUID();
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        root.addAppender(captured);
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_logs")) {
            PublishedEvents published = new PublishedEvents();
            Publisher sink = new RecordingSink(published);
            LoggingPublisher logPublisher = new LoggingPublisher();
            Publisher both = new Publisher() {
                @Override
                public List<PublishResult> publish(List<OutboxEvent> events) {
                    logPublisher.publish(events);
                    return sink.publish(events);
                }

                @Override
                public void close() {
                }
            };
            OutboxRelay relay = new OutboxRelay(db.pool("relay", 2), both, Relays.fastConfig(db.schema()));
            PostgresIdempotentExecutor executor = db.executor("callers", 3, relay::wakeUp);
            relay.start();
            try {
                runEveryPathWith(marker, db, executor);
                assertTrue(BrokerOutageTest.awaitPublications(published, 2, 60), "the relay published the events");
                OutboxDeadLetters deadLetters = new OutboxDeadLetters(db.pool("operator", 1), db.schema());
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (deadLetters.count() == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                assertEquals(1, deadLetters.count(), "the undecodable row was dead-lettered");
            } finally {
                relay.stop();
            }
        } finally {
            root.detachAppender(captured);
        }

        List<ILoggingEvent> library = captured.list.stream()
                .filter(e -> e.getLoggerName().startsWith("dev.idempotency"))
                .filter(e -> e.getLevel().isGreaterOrEqual(Level.INFO))
                .toList();
        assertTrue(library.size() >= 3, "the capture works: the relay's own INFO lines are there (" + library.size() + ")");
        List<String> leaks = new ArrayList<>();
        for (ILoggingEvent event : library) {
            String text = event.getFormattedMessage() + throwableText(event.getThrowableProxy());
            if (text.contains(marker)) {
                leaks.add(event.getLevel() + " " + event.getLoggerName() + ": " + text);
            }
        }
        assertTrue(leaks.isEmpty(), "logged at INFO or above:\n" + String.join("\n", leaks));
    }

    private static void runEveryPathWith(String marker, FaultDatabase db, PostgresIdempotentExecutor executor) {
        String tenant = "tenant-logs";
        String key = "k-" + UUID.randomUUID();
        // A result and an outbox event (payload and header) holding the marker; then its replay.
        executor.run(key, tenant, String.class, tx -> {
            tx.outbox().publish("orders", "p1", Map.of("email", marker), Map.of("x-note", marker));
            return "result " + marker;
        });
        executor.run(key, tenant, String.class, tx -> "never");
        // A stored business failure, and its replay.
        String failed = "k-" + UUID.randomUUID();
        for (int i = 0; i < 2; i++) {
            assertThrows(BusinessFailure.class, () -> executor.run(failed, tenant, String.class, tx -> {
                throw new BusinessFailure("declined", "card of " + marker + " declined");
            }));
        }
        // A callback exception (rolled back) and a result too large to store.
        assertThrows(IllegalStateException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant, String.class, tx -> {
            throw new IllegalStateException("boom " + marker);
        }));
        assertThrows(ResultNotStorableException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant, String.class,
                tx -> marker + "x".repeat(70_000)));
        // Lease mode: a failing external step, a failing completion, a lost lease swept as unknown.
        assertThrows(IllegalStateException.class, () -> executor.runWithLease("k-" + UUID.randomUUID(), tenant, null,
                Duration.ofSeconds(10), String.class, leased -> {
                    throw new IllegalStateException("external " + marker);
                }, (PostgresTransaction tx, String s) -> s));
        assertThrows(BusinessFailure.class, () -> executor.runWithLease("k-" + UUID.randomUUID(), tenant, null,
                Duration.ofSeconds(10), String.class, leased -> "charged " + marker, (PostgresTransaction tx, String s) -> {
                    throw new BusinessFailure("rejected", s);
                }));
        assertThrows(LeaseLostException.class, () -> executor.runWithLease("k-" + UUID.randomUUID(), tenant, null,
                Duration.ofMillis(200), String.class, leased -> {
                    Thread.sleep(600);
                    return "late " + marker;
                }, (PostgresTransaction tx, String s) -> s));
        Sweeper.builder(db.pool("sweeper", 1)).schema(db.schema()).build().sweepOnce();
        // A consumer whose handler fails.
        Delivery delivery = IdempotentConsumer.create(executor, "mailer").consume("42", tenant, tx -> {
            throw new IllegalStateException("handler " + marker);
        });
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, delivery.outcome());
        // An outbox row written by hand that cannot be decoded: the relay dead-letters it.
        db.jdbi().useHandle(h -> h.createUpdate("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, headers) "
                        + "VALUES (:t, 'orders', 'p2', CAST(:p AS jsonb), CAST(:h AS jsonb))")
                .bind("t", tenant).bind("p", "{\"email\": \"" + marker + "\"}")
                .bind("h", "{\"x-note\": {\"nested\": \"" + marker + "\"}}").execute());
        executor.run("k-" + UUID.randomUUID(), tenant, String.class, tx -> {
            tx.outbox().publish("orders", "p3", Map.of("email", marker));
            return "ok";
        });
    }

    private static String throwableText(IThrowableProxy proxy) {
        StringBuilder text = new StringBuilder();
        for (IThrowableProxy t = proxy; t != null; t = t.getCause()) {
            text.append(' ').append(t.getClassName()).append(": ").append(t.getMessage());
        }
        return text.toString();
    }
}

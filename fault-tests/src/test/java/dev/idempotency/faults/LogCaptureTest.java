package dev.idempotency.faults;

import dev.idempotency.core.LeaseRequest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
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
import dev.idempotency.jdbc.UnknownOutcomes;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.publisher.log.LoggingPublisher;
import dev.idempotency.outbox.publisher.log.LoggingPublisherConfig;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
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
            LoggingPublisher logPublisher = new LoggingPublisher(LoggingPublisherConfig.builder().build());
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
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 2), both)
                    .config(Relays.fastConfig(db.schema())).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 3, relay::wakeUp);
            relay.start();
            try {
                runEveryPathWith(marker, db, executor);
                assertTrue(BrokerOutageTest.awaitPublications(published, 2, 60), "the relay published the events");
                OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(db.pool("operator", 1))
                        .schema(db.schema()).build();
                Await.until("the undecodable row dead-lettered", Duration.ofSeconds(60), () -> deadLetters.count() > 0);
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
        assertThrows(IllegalStateException.class, () -> executor.runWithLease(
                LeaseRequest.builder("k-" + UUID.randomUUID(), tenant)
                        .lease(Duration.ofSeconds(10)).resultType(String.class).build(),
                leased -> {
                    throw new IllegalStateException("external " + marker);
                }, (PostgresTransaction tx, String s) -> s));
        assertThrows(BusinessFailure.class, () -> executor.runWithLease(
                LeaseRequest.builder("k-" + UUID.randomUUID(), tenant)
                        .lease(Duration.ofSeconds(10)).resultType(String.class).build(),
                leased -> "charged " + marker, (PostgresTransaction tx, String s) -> {
                    throw new BusinessFailure("rejected", s);
                }));
        assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                LeaseRequest.builder("k-" + UUID.randomUUID(), tenant)
                        .lease(Duration.ofMillis(200)).resultType(String.class).build(),
                leased -> {
                    Thread.sleep(600); // time itself: past the 200 ms lease
                    return "late " + marker;
                }, (PostgresTransaction tx, String s) -> s));
        Sweeper.builder(db.pool("sweeper", 1)).schema(db.schema()).build().sweepOnce();
        // A consumer whose handler fails.
        Delivery delivery = IdempotentConsumer.builder(executor, "mailer").build().consume("42", tenant, tx -> {
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


    /**
     * The library's own statements bind results, failures, payloads and publish errors; when such a
     * statement fails (PostgreSQL refuses the jsonb, a constraint rejects the row), neither the
     * exception the caller gets (its whole cause chain, suppressed ones included) nor any INFO+ log
     * line may quote those values: not through Jdbi's rendering of the statement's arguments, not
     * through PostgreSQL's "Failing row contains (...)" detail or its JSON context.
     */
    @Test
    void noExceptionMessageOrLogLineQuotesABoundValueWhenTheLibrarysOwnStatementsFail() throws Exception {
        // One token (no dash), so that a JSON parser quoting a bad token would quote all of it.
        String marker = "PERSONAL" + UUID.randomUUID().toString().replace("-", "");
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        root.addAppender(captured);
        List<Throwable> thrown = new ArrayList<>();
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_bound")) {
            // Constraints of this test's own schema that refuse what the library's statements write.
            db.jdbi().useHandle(h -> h.createScript(
                    "ALTER TABLE idempotency_keys ADD CONSTRAINT test_refuses_failure "
                            + "CHECK (failure IS NULL OR failure->>'message' NOT LIKE 'refuse-me%'); "
                            + "ALTER TABLE outbox_retries ADD CONSTRAINT test_refuses_error "
                            + "CHECK (last_error IS NULL OR last_error NOT LIKE '%refuse-me%')").execute());
            PostgresIdempotentExecutor executor = db.executor("callers", 2, () -> { });
            String tenant = "tenant-bound";

            // A result and an outbox payload that PostgreSQL's jsonb refuses (\u0000 after the marker).
            thrown.add(assertThrows(ResultNotStorableException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant,
                    tx -> Map.of("note", marker + "\u0000"))));
            thrown.add(assertThrows(ResultNotStorableException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant,
                    String.class, tx -> {
                        tx.outbox().publish("orders", "p1", Map.of("email", marker + "\u0000"), Map.of("x-note", marker));
                        return "ok";
                    })));
            thrown.add(assertThrows(ResultNotStorableException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant,
                    String.class, tx -> marker + "x".repeat(70_000))));
            // A stored result replayed as a type it cannot be read as; an outbox payload that is not JSON.
            String typed = "k-" + UUID.randomUUID();
            executor.run(typed, tenant, String.class, tx -> marker);
            thrown.add(assertThrows(ResultNotStorableException.class, () -> executor.run(typed, tenant, Integer.class,
                    tx -> 1)));
            thrown.add(assertThrows(IllegalArgumentException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant,
                    String.class, tx -> {
                        tx.outbox().publishJson("orders", "p1", "{\"email\": " + marker + "}");
                        return "ok";
                    })));
            // The statement storing a business failure fails after the failure was encoded.
            thrown.add(assertThrows(RuntimeException.class, () -> executor.run("k-" + UUID.randomUUID(), tenant, String.class,
                    tx -> {
                        throw new BusinessFailure("declined", "refuse-me " + marker, Map.of("note", marker));
                    })));
            // Lease mode: storing the external step's business failure fails; a completion jsonb refuses; a lost lease.
            thrown.add(assertThrows(RuntimeException.class, () -> executor.runWithLease(
                    LeaseRequest.builder("k-" + UUID.randomUUID(), tenant)
                            .lease(Duration.ofSeconds(10)).resultType(String.class).build(),
                    leased -> {
                        throw new BusinessFailure("declined", "refuse-me " + marker, Map.of("note", marker));
                    }, (PostgresTransaction tx, String s) -> s)));
            thrown.add(assertThrows(ResultNotStorableException.class, () -> executor.runWithLease(
                    LeaseRequest.builder("k-" + UUID.randomUUID(), tenant)
                            .lease(Duration.ofSeconds(10)).resultType(String.class).build(),
                    leased -> marker + "\u0000",
                    (PostgresTransaction tx, String s) -> s)));
            String lost = "k-" + UUID.randomUUID();
            thrown.add(assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                    LeaseRequest.builder(lost, tenant).lease(Duration.ofMillis(200)).resultType(String.class).build(),
                    leased -> {
                        Thread.sleep(600); // time itself: past the 200 ms lease
                        return "late " + marker;
                    }, (PostgresTransaction tx, String s) -> s)));
            Sweeper.builder(db.pool("sweeper", 1)).schema(db.schema()).build().sweepOnce();
            // The operator resolves the unknown outcome with values the database refuses.
            UnknownOutcomes unknown = UnknownOutcomes.builder(db.pool("operator", 1))
                    .config(IdempotencyConfig.builder().schema(db.schema()).build()).build();
            assertEquals(1, unknown.list(10).size(), "the lost lease is an unknown outcome");
            thrown.add(assertThrows(RuntimeException.class, () -> unknown.resolveAsCompleted(lost, tenant, marker + "\u0000")));
            thrown.add(assertThrows(RuntimeException.class, () -> unknown.resolveAsFailed(lost, tenant,
                    new BusinessFailure("declined", "refuse-me " + marker, Map.of("note", marker)))));

            // The relay: a rejected event's dead letter, then a failed attempt, each with a broker's error text
            // (an HTTP response snippet) quoting the marker; the statements recording them fail.
            String snippet = "HTTP 400: {\"error\": \"refuse-me: bad address " + marker + "\"}";
            Publisher quoting = new Publisher() {
                @Override
                public List<PublishResult> publish(List<OutboxEvent> events) {
                    return events.stream().map(e -> e.partitionKey().equals("dead")
                            ? PublishResult.rejected(snippet) : PublishResult.retry(snippet)).toList();
                }

                @Override
                public void close() {
                }
            };
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 2), quoting)
                    .config(Relays.fastConfig(db.schema())).build();
            relay.start();
            try {
                executor.run("k-" + UUID.randomUUID(), tenant, String.class, tx -> {
                    tx.outbox().publish("orders", "dead", Map.of("email", marker), Map.of("x-note", marker));
                    return "ok";
                });
                awaitBatchFailures(captured, 1);
                int before = batchFailures(captured);
                executor.run("k-" + UUID.randomUUID(), tenant, String.class, tx -> {
                    tx.outbox().publish("orders", "retry", Map.of("email", marker), Map.of("x-note", marker));
                    return "ok";
                });
                awaitBatchFailures(captured, before + 2);
            } finally {
                relay.stop();
            }
        } finally {
            root.detachAppender(captured);
        }

        List<String> leaks = new ArrayList<>();
        for (Throwable t : thrown) {
            for (Throwable link : chain(t)) {
                if (String.valueOf(link.getMessage()).contains(marker) || link.toString().contains(marker)) {
                    leaks.add("exception " + link.getClass().getName() + " (in the chain of " + t.getClass().getName()
                            + "): " + link);
                }
            }
        }
        for (ILoggingEvent event : List.copyOf(captured.list)) {
            if (!event.getLevel().isGreaterOrEqual(Level.INFO)) {
                continue;
            }
            String text = event.getFormattedMessage() + throwableText(event.getThrowableProxy());
            if (text.contains(marker)) {
                leaks.add("log " + event.getLevel() + " " + event.getLoggerName() + ": " + text);
            }
        }
        assertTrue(leaks.isEmpty(), leaks.size() + " leaks:\n" + String.join("\n", leaks));
    }

    private static int batchFailures(ListAppender<ILoggingEvent> captured) {
        return (int) List.copyOf(captured.list).stream()
                .filter(e -> e.getLoggerName().startsWith("dev.idempotency.outbox") && e.getLevel() == Level.WARN)
                .filter(e -> e.getFormattedMessage().contains("batch failed"))
                .count();
    }

    private static void awaitBatchFailures(ListAppender<ILoggingEvent> captured, int atLeast) {
        Await.until("the relay's marking statement failing " + atLeast + " times", () -> batchFailures(captured) >= atLeast);
    }

    /** {@code t}, its causes and everything suppressed along the way. */
    private static Set<Throwable> chain(Throwable t) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        List<Throwable> todo = new ArrayList<>(List.of(t));
        while (!todo.isEmpty()) {
            Throwable next = todo.remove(todo.size() - 1);
            if (next == null || !seen.add(next)) {
                continue;
            }
            todo.add(next.getCause());
            todo.addAll(List.of(next.getSuppressed()));
            if (next instanceof java.sql.SQLException sql) {
                todo.add(sql.getNextException());
            }
        }
        return seen;
    }

    private static String throwableText(IThrowableProxy proxy) {
        StringBuilder text = new StringBuilder();
        appendThrowable(proxy, text, Collections.newSetFromMap(new IdentityHashMap<>()));
        return text.toString();
    }

    private static void appendThrowable(IThrowableProxy proxy, StringBuilder text, Set<IThrowableProxy> seen) {
        if (proxy == null || !seen.add(proxy)) {
            return;
        }
        text.append(' ').append(proxy.getClassName()).append(": ").append(proxy.getMessage());
        appendThrowable(proxy.getCause(), text, seen);
        for (IThrowableProxy suppressed : proxy.getSuppressed()) {
            appendThrowable(suppressed, text, seen);
        }
    }
}

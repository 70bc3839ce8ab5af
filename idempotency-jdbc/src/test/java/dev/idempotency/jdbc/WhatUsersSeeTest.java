package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyException;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * What a user sees of a failure (the exception's type, its toString, its causes and suppressed
 * exceptions, a delivery's toString, the library's log lines) names no class of an {@code internal}
 * package, and every exception the library raises of its own is an {@link IdempotencyException}.
 * Stack frames are not checked: they show where the code ran, internal classes included.
 */
class WhatUsersSeeTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);

    @Test
    void aReplayedBusinessFailureIsABusinessFailureAndShowsOnlyItsOwnName() {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
            throw new BusinessFailure("card_declined", "The card was declined", Map.of("decline_code", "insufficient_funds"));
        }));

        BusinessFailure replayed = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> "never"));

        assertTrue(replayed.replayed());
        assertEquals(BusinessFailure.class, replayed.getClass());
        assertEquals("dev.idempotency.core.BusinessFailure: The card was declined", replayed.toString());
        assertNamesNoInternalClass(replayed);
    }

    @Test
    void theExecutorsOwnFailuresShareTheRootAndNameNoInternalClass() {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        executor.run(key, "t1", RequestFingerprint.ofString("first"), tx -> "ok");
        List<ILoggingEvent> logged = new ArrayList<>();

        List<RuntimeException> thrown = logging(logged, () -> List.of(
                assertThrows(KeyReusedException.class,
                        () -> executor.run(key, "t1", RequestFingerprint.ofString("second"), tx -> "never")),
                assertThrows(InvalidIdempotencyKeyException.class, () -> executor.run(" ", "t1", tx -> "never")),
                assertThrows(ResultNotStorableException.class, () -> executor.run(newKey(), "t1", tx -> null)),
                assertThrows(ResultNotStorableException.class, () -> executor.run(newKey(), "t1", Map.class,
                        tx -> Map.of("unserialisable", new Object())))));

        for (RuntimeException e : thrown) {
            assertInstanceOf(IdempotencyException.class, e);
            assertNamesNoInternalClass(e);
        }
        assertNoInternalClassIn(logged);
    }

    @Test
    void aConsumersDeliveriesAndWarningsNameNoInternalClass() {
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(db.executor(), "seen").maxAttempts(1)
                .build();
        List<ILoggingEvent> logged = new ArrayList<>();

        List<Delivery> deliveries = logging(logged, () -> List.of(
                consumer.consume("m-1", " ", tx -> { }),
                consumer.consume("m-2", "t1", tx -> {
                    throw new BusinessFailure("refused", "The order was refused");
                }),
                consumer.consume("m-3", "t1", tx -> {
                    throw new IllegalStateException("the handler failed");
                })));

        assertEquals(List.of(Delivery.Outcome.INVALID, Delivery.Outcome.FAILED_PERMANENTLY, Delivery.Outcome.DEAD_LETTER),
                deliveries.stream().map(Delivery::outcome).toList());
        for (Delivery delivery : deliveries) {
            assertFalse(delivery.toString().contains(".internal."), delivery.toString());
            assertNamesNoInternalClass(delivery.error());
        }
        assertNoInternalClassIn(logged);
    }

    /** Runs {@code calls} with the library's log lines added to {@code logged}; returns what they returned. */
    private static <T> T logging(List<ILoggingEvent> logged, java.util.function.Supplier<T> calls) {
        Logger library = (Logger) LoggerFactory.getLogger("dev.idempotency");
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        library.addAppender(captured);
        try {
            return calls.get();
        } finally {
            library.detachAppender(captured);
            logged.addAll(captured.list);
        }
    }

    /** The exception, its causes and its suppressed exceptions: type, message and toString. */
    private static void assertNamesNoInternalClass(Throwable e) {
        for (Throwable seen = e; seen != null; seen = seen.getCause()) {
            assertFalse(seen.getClass().getName().contains(".internal."), "a user sees " + seen.getClass().getName());
            assertFalse(seen.toString().contains(".internal."), "a user sees " + seen);
            for (Throwable suppressed : seen.getSuppressed()) {
                assertNamesNoInternalClass(suppressed);
            }
        }
    }

    private static void assertNoInternalClassIn(List<ILoggingEvent> logged) {
        for (ILoggingEvent event : logged) {
            assertFalse(event.getFormattedMessage().contains(".internal."), event.getFormattedMessage());
            for (IThrowableProxy thrown = event.getThrowableProxy(); thrown != null; thrown = thrown.getCause()) {
                assertFalse(thrown.getClassName().contains(".internal."), "logged " + thrown.getClassName());
                assertFalse(String.valueOf(thrown.getMessage()).contains(".internal."), "logged " + thrown.getMessage());
            }
        }
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class FingerprintAndFailureTest {
    record Charge(String card, long cents) {
    }

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor();
    }

    @Test
    void aKeyReusedWithAnotherRequestIsRefusedWithoutRunningOrRevealingTheOutcome() {
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();
        executor.run(key, "t1", RequestFingerprint.ofJson(new Charge("4242", 1000)), tx -> {
            runs.incrementAndGet();
            return "secret-receipt-" + insertPayment(tx, 1000);
        });

        KeyReusedException e = assertThrows(KeyReusedException.class,
                () -> executor.run(key, "t1", RequestFingerprint.ofJson(new Charge("4242", 9999)), tx -> {
                    runs.incrementAndGet();
                    return "never";
                }));

        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, "t1"));
        assertFalse(e.getMessage().contains("secret-receipt"), e.getMessage());
        assertTrue(e.getMessage().contains("422"), e.getMessage());
    }

    @Test
    void theSameRequestWithTheSameKeyReplays() {
        String key = newKey();
        executor.run(key, "t1", RequestFingerprint.ofJson(Map.of("card", "4242", "cents", 1000)), tx -> "ok");

        // Map order differs: the fingerprint is of canonical JSON.
        Outcome<String> replay = executor.run(key, "t1",
                RequestFingerprint.ofJson(new java.util.TreeMap<>(Map.of("cents", 1000, "card", "4242"))), tx -> "never");

        assertTrue(replay.replayed());
        assertEquals("ok", replay.result());
    }

    @Test
    void aKeyFirstUsedWithoutAFingerprintRefusesOneWithAFingerprint() {
        String key = newKey();
        executor.run(key, "t1", tx -> "ok");

        assertThrows(KeyReusedException.class, () -> executor.run(key, "t1", RequestFingerprint.ofString("body"), tx -> "never"));
    }

    @Test
    void aDeclaredBusinessFailureIsStoredWithoutItsBusinessWritesAndReplayedAsTheSameFailure() {
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();

        BusinessFailure first = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            insertPayment(tx, 500);
            tx.outbox().publish("payments", key, Map.of("event", "attempted"));
            throw new BusinessFailure("card_declined", "The card was declined", Map.of("decline_code", "insufficient_funds"));
        }));
        BusinessFailure replay = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            return "never";
        }));

        assertEquals(1, runs.get());
        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        // What a user sees (a log line, a stack trace) names the public class, no internal one.
        assertEquals("dev.idempotency.core.BusinessFailure: The card was declined", replay.toString());
        assertEquals("card_declined", replay.code());
        assertEquals("The card was declined", replay.getMessage());
        assertEquals(Map.of("decline_code", "insufficient_funds"), replay.details());
        assertEquals(0, db.payments(key, "t1"));
        assertEquals(0, db.outboxEvents("t1", key));
        assertEquals("failed", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void anyOtherExceptionRollsBackEverythingIncludingTheKeySoARetryRunsAgain() {
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            insertPayment(tx, 500);
            tx.outbox().publish("payments", key, Map.of("event", "captured"));
            throw new IllegalStateException("connection to the card network reset");
        }));
        assertEquals("connection to the card network reset", e.getMessage());
        assertEquals(0, db.keyRows(key, "t1"));
        assertEquals(0, db.payments(key, "t1"));
        assertEquals(0, db.outboxEvents("t1", key));

        Outcome<String> retry = executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            return "paid-" + insertPayment(tx, 500);
        });

        assertEquals(2, runs.get());
        assertFalse(retry.replayed());
        assertEquals(1, db.payments(key, "t1"));
    }

    @Test
    void checkedExceptionsFromTheCallbackReachTheCallerUnwrapped() {
        String key = newKey();

        java.io.IOException e = assertThrows(java.io.IOException.class, () -> executor.run(key, "t1", tx -> {
            throw new java.io.IOException("upstream refused");
        }));

        assertEquals("upstream refused", e.getMessage());
        assertEquals(0, db.keyRows(key, "t1"));
    }
}

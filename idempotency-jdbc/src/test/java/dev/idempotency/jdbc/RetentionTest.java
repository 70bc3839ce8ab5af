package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class RetentionTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(18);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> c.retention(Duration.ofHours(1)).waitBudget(Duration.ofSeconds(30)));
    }

    @Test
    void theExpiryIsComputedByTheDatabaseClockFromTheConfiguredRetention() {
        String key = newKey();

        executor.run(key, "t1", tx -> "ok");

        boolean oneHourAfterCreation = db.jdbi.withHandle(h -> h.createQuery(
                        "SELECT expires_at = created_at + interval '1 hour' FROM idempotency_keys WHERE idempotency_key = :k")
                .bind("k", key).mapTo(Boolean.class).one());
        assertTrue(oneHourAfterCreation);
    }

    @Test
    void afterRetentionTheKeyIsNewAgain() {
        String key = newKey();
        executor.run(key, "t1", tx -> "first-" + insertPayment(tx, 1));
        expire(key);

        Outcome<String> again = executor.run(key, "t1", tx -> "second-" + insertPayment(tx, 2));

        assertFalse(again.replayed());
        assertTrue(again.result().startsWith("second-"));
        assertEquals(2, db.payments(key, "t1"));
        assertTrue(executor.run(key, "t1", tx -> "never").replayed());
    }

    @Test
    void aReclaimedKeysCallbackKeepsTheConnectionsLockTimeout() {
        String key = newKey();
        executor.run(key, "t1", tx -> "old");
        expire(key);

        String inside = executor.run(key, "t1", tx -> tx.handle().createQuery("SHOW lock_timeout").mapTo(String.class).one())
                .result();

        assertEquals("0", inside);
    }

    /** The claim sends a savepoint with its insert; a reclaim must take its own after its update, or this loses the key. */
    @Test
    void aReclaimedKeysBusinessFailureIsStoredAndOnlyTheCallbacksWritesRolledBack() {
        String key = newKey();
        executor.run(key, "t1", tx -> "old-" + insertPayment(tx, 1));
        expire(key);

        BusinessFailure thrown = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 2);
            throw new BusinessFailure("card_declined", "The card was declined", Map.of());
        }));

        assertEquals("card_declined", thrown.code());
        assertEquals(1, db.payments(key, "t1"));
        BusinessFailure replayed = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> "never"));
        assertEquals("card_declined", replayed.code());
    }

    @Test
    void racingCallersReclaimAnExpiredKeyExactlyOnce() throws Exception {
        String key = newKey();
        executor.run(key, "t1", tx -> "old");
        expire(key);
        int callers = 16;
        AtomicInteger runs = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(callers);
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            List<Future<Outcome<String>>> outcomes = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                outcomes.add(pool.submit(() -> {
                    start.await();
                    return executor.run(key, "t1", tx -> {
                        runs.incrementAndGet();
                        Thread.sleep(50); // widens the race: the others reach the expired key meanwhile (the outcome holds either way)
                        return "new-" + insertPayment(tx, 3);
                    });
                }));
            }
            List<String> results = new ArrayList<>();
            for (Future<Outcome<String>> outcome : outcomes) {
                results.add(outcome.get(45, TimeUnit.SECONDS).result());
            }

            assertEquals(1, runs.get());
            assertEquals(1, results.stream().distinct().count());
            assertTrue(results.get(0).startsWith("new-"));
        } finally {
            pool.shutdownNow();
        }
    }

    private static void expire(String key) {
        db.jdbi.useHandle(h -> h.createUpdate("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' "
                + "WHERE idempotency_key = :k").bind("k", key).execute());
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(120)
class ConcurrentDuplicatesTest {
    private static final int THREADS = 32;

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(THREADS + 2);
    private static ExecutorService pool;

    @BeforeAll
    static void setUp() {
        pool = Executors.newFixedThreadPool(THREADS);
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @Test
    void thirtyTwoThreadsRacingOnTheSameKeysRunEachCallbackExactlyOnceAndAllGetItsResult() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(30)));
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            keys.add(newKey());
        }
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Map<String, Set<Long>> resultsSeen = new ConcurrentHashMap<>();
        AtomicInteger replays = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(THREADS);

        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            futures.add(pool.submit(() -> {
                List<String> order = new ArrayList<>(keys);
                Collections.shuffle(order);
                start.await();
                for (String key : order) {
                    Outcome<Long> outcome = executor.run(key, "t1", Long.class, tx -> {
                        runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        long id = insertPayment(tx, 100);
                        Thread.sleep(20); // keep the transaction open so that others pile up behind it
                        return id;
                    });
                    resultsSeen.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(outcome.result());
                    if (outcome.replayed()) {
                        replays.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        for (Future<?> future : futures) {
            future.get(100, TimeUnit.SECONDS);
        }

        for (String key : keys) {
            assertEquals(1, runs.get(key).get(), "callback runs for " + key);
            assertEquals(1, db.payments(key, "t1"), "payments for " + key);
            assertEquals(1, resultsSeen.get(key).size(), "distinct results for " + key);
        }
        assertEquals(THREADS * keys.size() - keys.size(), replays.get());
    }

    @Test
    void aDuplicateWaitsOnThePostgresRowLockAndThenReplaysTheFirstResult() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);

        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> {
            firstInside.countDown();
            releaseFirst.await();
            return "paid-" + insertPayment(tx, 5);
        }));
        assertTrue(firstInside.await(30, TimeUnit.SECONDS));
        AtomicInteger duplicateRuns = new AtomicInteger();
        Future<Outcome<String>> duplicate = pool.submit(() -> executor.run(key, "t1", tx -> {
            duplicateRuns.incrementAndGet();
            return "never";
        }));

        awaitBackendWaitingOnALock(key);
        releaseFirst.countDown();

        Outcome<String> replay = duplicate.get(30, TimeUnit.SECONDS);
        assertTrue(replay.replayed());
        assertEquals(first.get(30, TimeUnit.SECONDS).result(), replay.result());
        assertEquals(0, duplicateRuns.get());
    }

    @Test
    void aDuplicateThatWaitsPastTheBudgetGetsInProgressAndRunsNothing() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofMillis(300)));
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> {
            firstInside.countDown();
            releaseFirst.await();
            return "done";
        }));
        assertTrue(firstInside.await(30, TimeUnit.SECONDS));
        AtomicInteger duplicateRuns = new AtomicInteger();

        KeyInProgressException e = assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> {
            duplicateRuns.incrementAndGet();
            return "never";
        }));

        releaseFirst.countDown();
        assertEquals("done", first.get(30, TimeUnit.SECONDS).result());
        assertEquals(0, duplicateRuns.get());
        assertTrue(e.getMessage().contains("409"), e.getMessage());
        assertTrue(executor.run(key, "t1", tx -> "never").replayed());
    }

    @Test
    void whenTheFirstCallRollsBackAWaitingDuplicateRunsTheCallbackItself() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            firstInside.countDown();
            releaseFirst.await();
            throw new IllegalStateException("card network timed out");
        }));
        assertTrue(firstInside.await(30, TimeUnit.SECONDS));
        Future<Outcome<String>> duplicate = pool.submit(() -> executor.run(key, "t1", tx -> "second-" + insertPayment(tx, 2)));

        awaitBackendWaitingOnALock(key);
        releaseFirst.countDown();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> first.get(30, TimeUnit.SECONDS));
        assertEquals("card network timed out", failed.getCause().getMessage());
        Outcome<String> second = duplicate.get(30, TimeUnit.SECONDS);
        assertFalse(second.replayed());
        assertTrue(second.result().startsWith("second-"));
        assertEquals(1, db.payments(key, "t1"));
    }

    /** Waits until some backend of this test database is blocked on a heavyweight lock (our row lock). */
    private static void awaitBackendWaitingOnALock(String key) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            long waiting = db.jdbi.withHandle(h -> h.createQuery(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE :ourTable")
                    .bind("ourTable", "%\"" + db.schema.name() + "\".idempotency_keys%")
                    .mapTo(Long.class).one());
            if (waiting > 0) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no caller ever waited on the row lock of " + key);
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.awaitDuplicatesWaitingInProcess;
import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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

    /** {@code processes}: 1, all threads share one executor; 32, each has its own, as in as many processes. */
    @ParameterizedTest
    @ValueSource(ints = {1, THREADS})
    void thirtyTwoThreadsRacingOnTheSameKeysRunEachCallbackExactlyOnceAndAllGetItsResult(int processes) throws Exception {
        List<PostgresIdempotentExecutor> executors = new ArrayList<>();
        for (int i = 0; i < processes; i++) {
            executors.add(db.executor(c -> c.waitBudget(Duration.ofSeconds(30))));
        }
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
            PostgresIdempotentExecutor executor = executors.get(t % processes);
            futures.add(pool.submit(() -> {
                List<String> order = new ArrayList<>(keys);
                Collections.shuffle(order);
                start.await();
                for (String key : order) {
                    Outcome<Long> outcome = executor.run(key, "t1", Long.class, tx -> {
                        runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        long id = insertPayment(tx, 100);
                        Thread.sleep(20); // widens the race: others pile up behind this open transaction (the outcome holds either way)
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
    void aDuplicateFromAnotherProcessWaitsOnThePostgresRowLockAndThenReplaysTheFirstResult() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
        PostgresIdempotentExecutor otherProcess = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
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
        Future<Outcome<String>> duplicate = pool.submit(() -> otherProcess.run(key, "t1", tx -> {
            duplicateRuns.incrementAndGet();
            return "never";
        }));

        db.awaitCallersWaitingOnAKeyRow(1);
        releaseFirst.countDown();

        Outcome<String> replay = duplicate.get(30, TimeUnit.SECONDS);
        assertTrue(replay.replayed());
        assertEquals(first.get(30, TimeUnit.SECONDS).result(), replay.result());
        assertEquals(0, duplicateRuns.get());
    }

    /** {@code sameProcess}: the duplicate waits for the first call in the executor; else on its key row in PostgreSQL. */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aDuplicateThatWaitsPastTheBudgetGetsInProgressAndRunsNothing(boolean sameProcess) throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofMillis(300)));
        PostgresIdempotentExecutor duplicates = sameProcess ? executor : db.executor(c -> c.waitBudget(Duration.ofMillis(300)));
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

        long started = System.nanoTime();
        KeyInProgressException e = assertThrows(KeyInProgressException.class, () -> duplicates.run(key, "t1", tx -> {
            duplicateRuns.incrementAndGet();
            return "never";
        }));
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

        releaseFirst.countDown();
        assertEquals("done", first.get(30, TimeUnit.SECONDS).result());
        assertEquals(0, duplicateRuns.get());
        assertTrue(e.getMessage().contains("409"), e.getMessage());
        assertTrue(waitedMillis >= 290 && waitedMillis < 3_000, "waited " + waitedMillis + " ms on a 300 ms budget");
        assertTrue(duplicates.run(key, "t1", tx -> "never").replayed());
    }

    @Test
    void duplicatesInTheFirstCallsProcessWaitForItWithoutAConnectionAndReplayItsResult() throws Exception {
        HikariConfig settings = new HikariConfig();
        try (HikariDataSource template = db.schema.newPool(1)) {
            template.copyStateTo(settings);
        }
        settings.setPoolName("one-connection-" + System.nanoTime());
        settings.setMaximumPoolSize(1);
        try (HikariDataSource oneConnection = new HikariDataSource(settings)) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(oneConnection)
                    .config(IdempotencyConfig.builder().schema(db.schema.name()).waitBudget(Duration.ofSeconds(30)).build())
                    .build();
            String key = newKey();
            CountDownLatch firstInside = new CountDownLatch(1);
            CountDownLatch releaseFirst = new CountDownLatch(1);
            Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> {
                firstInside.countDown();
                releaseFirst.await();
                return "paid-" + insertPayment(tx, 5);
            }));
            assertTrue(firstInside.await(30, TimeUnit.SECONDS), () -> "the first call never reached its callback: " + stateOf(first));
            AtomicInteger duplicateRuns = new AtomicInteger();
            List<Future<Outcome<String>>> duplicates = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                duplicates.add(pool.submit(() -> executor.run(key, "t1", tx -> {
                    duplicateRuns.incrementAndGet();
                    return "never";
                })));
            }

            awaitDuplicatesWaitingInProcess(8);
            // Asked of the pool itself, not inferred from a timeout that the first call's own request would share.
            assertEquals(0, oneConnection.getHikariPoolMXBean().getThreadsAwaitingConnection(),
                    "duplicates waiting for the first call must not wait for a connection");
            releaseFirst.countDown();

            String result = first.get(30, TimeUnit.SECONDS).result();
            for (Future<Outcome<String>> duplicate : duplicates) {
                Outcome<String> replay = duplicate.get(30, TimeUnit.SECONDS);
                assertTrue(replay.replayed());
                assertEquals(result, replay.result());
            }
            assertEquals(0, duplicateRuns.get());
            assertEquals(1, db.payments(key, "t1"));
        }
    }

    /** What a call submitted to the pool has come to: still running, returned, or its failure. */
    private static String stateOf(Future<?> call) {
        if (!call.isDone()) {
            return "still running";
        }
        try {
            call.get();
            return "returned without running it";
        } catch (ExecutionException e) {
            return "failed with " + e.getCause();
        } catch (InterruptedException | java.util.concurrent.CancellationException e) {
            return e.toString();
        }
    }

    @Test
    void aBusinessFailureTheFirstCallStoredIsReplayedToItsDuplicatesInTheSameProcess() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(30)));
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            insertPayment(tx, 5);
            firstInside.countDown();
            releaseFirst.await();
            throw new BusinessFailure("card_declined", "The card was declined.");
        }));
        assertTrue(firstInside.await(30, TimeUnit.SECONDS));
        List<Future<Outcome<String>>> duplicates = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            duplicates.add(pool.submit(() -> executor.run(key, "t1", tx -> {
                runs.incrementAndGet();
                return "never";
            })));
        }
        awaitDuplicatesWaitingInProcess(4);
        releaseFirst.countDown();

        ExecutionException firstFailure = assertThrows(ExecutionException.class, () -> first.get(30, TimeUnit.SECONDS));
        assertFalse(((BusinessFailure) firstFailure.getCause()).replayed());
        for (Future<Outcome<String>> duplicate : duplicates) {
            ExecutionException replayed = assertThrows(ExecutionException.class, () -> duplicate.get(30, TimeUnit.SECONDS));
            BusinessFailure failure = (BusinessFailure) replayed.getCause();
            assertEquals("card_declined", failure.code());
            assertTrue(failure.replayed());
        }
        assertEquals(1, runs.get());
        assertEquals(0, db.payments(key, "t1"));
    }

    @Test
    void aDuplicateWithAnotherFingerprintInTheSameProcessIsToldTheKeyWasReused() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(30)));
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", RequestFingerprint.ofString("amount=5"), tx -> {
            firstInside.countDown();
            releaseFirst.await();
            return "paid";
        }));
        assertTrue(firstInside.await(30, TimeUnit.SECONDS));
        AtomicInteger otherRuns = new AtomicInteger();
        Future<Outcome<String>> other = pool.submit(() -> executor.run(key, "t1", RequestFingerprint.ofString("amount=9"), tx -> {
            otherRuns.incrementAndGet();
            return "never";
        }));
        db.awaitCallersWaitingOnAKeyRow(1); // another fingerprint is not coalesced: it waits on the key row
        releaseFirst.countDown();

        assertEquals("paid", first.get(30, TimeUnit.SECONDS).result());
        ExecutionException reused = assertThrows(ExecutionException.class, () -> other.get(30, TimeUnit.SECONDS));
        assertTrue(reused.getCause() instanceof KeyReusedException, String.valueOf(reused.getCause()));
        assertEquals(0, otherRuns.get());
    }

    @Test
    void aDuplicateWhoseFirstCallWaitedPastTheBudgetOnAnotherProcessGetsInProgressWithinItsOwnBudget() throws Exception {
        Duration budget = Duration.ofMillis(1_500);
        PostgresIdempotentExecutor otherProcess = db.executor(c -> c.waitBudget(budget));
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(budget));
        String key = newKey();
        CountDownLatch holderInside = new CountDownLatch(1);
        CountDownLatch releaseHolder = new CountDownLatch(1);
        Future<Outcome<String>> holder = pool.submit(() -> otherProcess.run(key, "t1", tx -> {
            holderInside.countDown();
            releaseHolder.await();
            return "held";
        }));
        assertTrue(holderInside.await(30, TimeUnit.SECONDS));
        Future<Outcome<String>> first = pool.submit(() -> executor.run(key, "t1", tx -> "never"));
        db.awaitCallersWaitingOnAKeyRow(1);
        long started = System.nanoTime();

        // Waits for the first call here, which gets nothing to share (in progress), then for what is left on the row.
        assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> "never"));
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

        ExecutionException firstInProgress = assertThrows(ExecutionException.class, () -> first.get(30, TimeUnit.SECONDS));
        assertTrue(firstInProgress.getCause() instanceof KeyInProgressException, String.valueOf(firstInProgress.getCause()));
        releaseHolder.countDown();
        assertEquals("held", holder.get(30, TimeUnit.SECONDS).result());
        assertTrue(waitedMillis < budget.toMillis() + 700, "the duplicate waited " + waitedMillis + " ms on a "
                + budget.toMillis() + " ms budget");
    }

    @Test
    void whenTheFirstCallRollsBackADuplicateWaitingInAnotherProcessRunsTheCallbackItself() throws Exception {
        PostgresIdempotentExecutor executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
        PostgresIdempotentExecutor otherProcess = db.executor(c -> c.waitBudget(Duration.ofSeconds(60)));
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
        Future<Outcome<String>> duplicate = pool.submit(() -> otherProcess.run(key, "t1", tx -> "second-" + insertPayment(tx, 2)));

        db.awaitCallersWaitingOnAKeyRow(1);
        releaseFirst.countDown();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> first.get(30, TimeUnit.SECONDS));
        assertEquals("card network timed out", failed.getCause().getMessage());
        Outcome<String> second = duplicate.get(30, TimeUnit.SECONDS);
        assertFalse(second.replayed());
        assertTrue(second.result().startsWith("second-"));
        assertEquals(1, db.payments(key, "t1"));
    }

    @Test
    void whenTheFirstCallRollsBackItsDuplicatesInTheSameProcessRunTheCallbackOnceBetweenThem() throws Exception {
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
        AtomicInteger runs = new AtomicInteger();
        List<Future<Outcome<String>>> duplicates = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            duplicates.add(pool.submit(() -> executor.run(key, "t1", tx -> {
                runs.incrementAndGet();
                return "second-" + insertPayment(tx, 2);
            })));
        }
        awaitDuplicatesWaitingInProcess(4);
        releaseFirst.countDown();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> first.get(30, TimeUnit.SECONDS));
        assertEquals("card network timed out", failed.getCause().getMessage());
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> duplicate : duplicates) {
            outcomes.add(duplicate.get(30, TimeUnit.SECONDS));
        }
        assertEquals(1, runs.get());
        assertEquals(1, outcomes.stream().filter(o -> !o.replayed()).count(), String.valueOf(outcomes));
        assertEquals(1, outcomes.stream().map(Outcome::result).distinct().count(), String.valueOf(outcomes));
        assertEquals(1, db.payments(key, "t1"));
    }
}

package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.core.Outcome;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Phaser;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * Section 4: a duplicate storm. Callers (64 by default) are released together by a barrier with the
 * same fresh key; one runs the payment, the rest wait for it and replay: in one executor (the first
 * row) they wait for the first call in process; spread over four executors with a pool each (the
 * second row, as four service instances), the first call of each other executor waits on the
 * winner's key row in PostgreSQL. Each caller has a connection of its own when PostgreSQL has
 * enough free (max_connections is 100 by default, so up to about 90); more callers share the
 * pools, and those without a connection wait in a pool, then replay. The winner's callback holds
 * until every caller has started its call, so that all the others are waiting duplicates when it
 * commits: without that hold, 200 threads on two cores started over several milliseconds, and the
 * last ones arrived after the winner had returned. Per round it measures the time from the winner's
 * return (just after its commit) to the last duplicate's return, over as many rounds as fit in the
 * window. Target: p99 under 5 ms, and no errors (every round exactly one first run, every other
 * call a replay).
 */
final class DuplicateStorm implements Section {
    static final double LAST_REPLAY_CEILING_MILLIS = 5.0;
    /** The second row: the same callers spread over this many executors, each on a pool of its own. */
    private static final int PROCESSES_APART = 4;
    /** The admin connection, and a margin for a monitoring session, beside the storm's pool. */
    private static final int SPARE_CONNECTIONS = 2;
    /** Longest a caller waits at the barrier for the others before the storm is declared stuck. */
    private static final long BARRIER_TIMEOUT_SECONDS = 120;
    /** Longest the winner's callback holds for the other callers to start; past it the round is an error. */
    private static final long HOLD_TIMEOUT_SECONDS = 10;

    private static final int FIRST_RUN = 0;
    private static final int REPLAY = 1;
    private static final int ERROR = 2;

    @Override
    public String name() {
        return "storm";
    }

    @Override
    public String title() {
        return "4 duplicate storm";
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        int callers = run.settings().stormCallers();
        int free = run.database().freeConnections();
        // One connection per caller where PostgreSQL has them; beyond, callers share the pools, as a service's
        // request threads share a pool smaller than their number.
        int connections = Math.min(callers, free - SPARE_CONNECTIONS);
        if (connections < 2) {
            throw new IllegalStateException("the duplicate storm needs at least 2 connections (plus "
                    + SPARE_CONNECTIONS + " spare) but PostgreSQL accepts only " + free + " more right now "
                    + "(max_connections minus reserved minus those in use); free some");
        }
        int apart = Math.min(PROCESSES_APART, callers);
        // Per cell, each run's p99 of how long after a round began its last caller started its call.
        List<List<Double>> releaseSpreads = List.of(new ArrayList<>(), new ArrayList<>());
        List<Measurement> measured = run.interleaved(List.of(
                new BenchmarkRun.Cell("storm", callers, () -> storm(run, callers, connections, 1, releaseSpreads.get(0))),
                new BenchmarkRun.Cell("storm across " + apart + " executors", callers,
                        () -> storm(run, callers, connections, apart, releaseSpreads.get(1)))));
        List<ResultRow> rows = new ArrayList<>();
        for (int i = 0; i < measured.size(); i++) {
            Measurement m = measured.get(i);
            String where = i == 0 ? "one executor" : apart + " executors (as " + apart + " service instances)";
            rows.add(new ResultRow(title(), callers + " callers, one key, " + where + ": last replay after winner returns"
                    + (connections < callers ? " (" + connections + " connections)" : ""), callers, null,
                    m.p50Millis(), m.p99Millis(), ClientCost.NONE,
                    m.operations() + " rounds, " + m.errors() + " errors" + (m.firstError() != null ? " (" + m.firstError() + ")" : "")
                            + "; all callers started within " + Targets.format(Measurement.medianOf(releaseSpreads.get(i))) + " ms (p99)",
                    Targets.verdict(m.p99Millis() < LAST_REPLAY_CEILING_MILLIS && m.errors() == 0,
                            "p99 < " + (long) LAST_REPLAY_CEILING_MILLIS + " ms, 0 errors")));
        }
        run.note("Section 4: the winner's callback holds until every caller has started its call; "
                + "p50/p99 are of the last duplicate's return after the winner's return, per round; "
                + "a duplicate that returns before the winner's thread records its own return counts as 0. Duplicates "
                + "in the winner's executor wait for it in process; those of other executors wait on the key row in PostgreSQL. "
                + "Callers (--storm-callers, up to 200) beyond the connections PostgreSQL has free (max_connections less those "
                + "in use, less " + SPARE_CONNECTIONS + ") share the pools, as a service's request threads share a pool smaller "
                + "than their number: the row then names the connections, and the duplicates without one wait in the pool first.");
        return rows;
    }

    /**
     * {@code callers} over {@code processes} executors, each with a pool of its own (a share of
     * {@code connections}); adds the run's release spread (p99, ms) to {@code releaseSpreads}.
     */
    private static Measurement storm(BenchmarkRun run, int callers, int connections, int processes,
                                     List<Double> releaseSpreads) throws Exception {
        List<HikariDataSource> pools = new ArrayList<>();
        try {
            List<PostgresIdempotentExecutor> executors = new ArrayList<>();
            for (int p = 0; p < processes; p++) {
                // Pool p serves callers p, p + processes, ...: a connection each, within the total.
                int poolCallers = (callers - p + processes - 1) / processes;
                int poolConnections = Math.max(1, Math.min(poolCallers, (connections - p + processes - 1) / processes));
                HikariDataSource pool = run.database().pool(processes == 1 ? "storm" : "storm-" + p, poolConnections);
                pools.add(pool);
                executors.add(PostgresIdempotentExecutor.builder(pool).config(run.executorConfig()).build());
            }
            Rounds rounds = storm(run, callers, executors);
            releaseSpreads.add(rounds.releaseSpreadP99Millis());
            return rounds.result();
        } finally {
            pools.forEach(HikariDataSource::close);
        }
    }

    private static Rounds storm(BenchmarkRun run, int callers, List<PostgresIdempotentExecutor> executors) throws Exception {
        String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
        Duration warmup = run.warmup("storm").least();
        Rounds rounds = new Rounds(callers, System.nanoTime() + warmup.toNanos(), run.settings().window().toNanos());
        // A Phaser, not a CyclicBarrier: a CyclicBarrier's waiters leave one by one through its lock, so with
        // 200 callers on two cores the last left milliseconds after the first, after the winner had returned.
        Phaser barrier = new Phaser(callers) {
            @Override
            protected boolean onAdvance(int phase, int parties) {
                rounds.next();
                return false;
            }
        };
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Exception> stuck = new AtomicReference<>();
        for (int i = 0; i < callers; i++) {
            int index = i;
            PostgresIdempotentExecutor executor = executors.get(i % executors.size());
            Thread thread = new Thread(() -> {
                try {
                    while (true) {
                        if (barrier.awaitAdvanceInterruptibly(barrier.arrive(), BARRIER_TIMEOUT_SECONDS, TimeUnit.SECONDS) < 0) {
                            return; // another caller timed out and ended the storm
                        }
                        String key = rounds.key;
                        if (key == null) {
                            return;
                        }
                        rounds.started(index);
                        try {
                            Outcome<Long> outcome = PaymentCalls.executorPayment(executor, insertPayment, key,
                                    rounds::holdUntilAllStarted);
                            rounds.record(index, outcome.replayed() ? REPLAY : FIRST_RUN, null);
                        } catch (RuntimeException e) {
                            rounds.record(index, ERROR, e);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (TimeoutException e) {
                    stuck.compareAndSet(null, e);
                    barrier.forceTermination();
                }
            }, "storm-caller-" + i);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
        long joinDeadline = System.nanoTime() + warmup.toNanos() + run.settings().window().toNanos()
                + TimeUnit.SECONDS.toNanos(BARRIER_TIMEOUT_SECONDS * 2);
        for (Thread thread : threads) {
            thread.join(Math.max(1, (joinDeadline - System.nanoTime()) / 1_000_000));
            if (thread.isAlive()) {
                threads.forEach(Thread::interrupt);
                throw new IllegalStateException("duplicate storm: a caller did not finish; the database may be stuck");
            }
        }
        if (stuck.get() != null) {
            throw new IllegalStateException("duplicate storm: callers stopped meeting at the barrier ("
                    + stuck.get() + "); a call may have hung", stuck.get());
        }
        return rounds;
    }

    /**
     * The rounds' bookkeeping. The barrier runs {@link #next()} once all callers have returned from
     * a round: it scores that round and hands out the next key (or null to stop). The phaser orders
     * these writes before the callers' reads, so plain fields suffice.
     */
    private static final class Rounds {
        private final int[] kinds;
        private final long[] returnedAt;
        private final long[] startedAt;
        /** Per measured round, how long after it began its last caller started its call. */
        private final Histogram releaseSpread = Measurement.newLatencyHistogram();
        private final long measureFrom;
        private final long measureUntil;
        private final Histogram lastReplay = Measurement.newLatencyHistogram();
        private volatile String key;
        /** Counts this round's callers down as they start; the winner's callback waits for zero. */
        private CountDownLatch notStarted;
        private boolean heldTooLong;
        private long roundStartedAt;
        private long measuredRounds;
        private long errors;
        private String firstError;

        Rounds(int callers, long measureFrom, long windowNanos) {
            this.kinds = new int[callers];
            this.returnedAt = new long[callers];
            this.startedAt = new long[callers];
            this.measureFrom = measureFrom;
            this.measureUntil = measureFrom + windowNanos;
        }

        void started(int caller) {
            startedAt[caller] = System.nanoTime();
            notStarted.countDown();
        }

        /** Run by the round's winner in its callback: returns once every caller has started its call. */
        void holdUntilAllStarted() {
            try {
                if (!notStarted.await(HOLD_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    heldTooLong = true;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while holding for the storm's callers", e);
            }
        }

        void record(int caller, int kind, Exception error) {
            returnedAt[caller] = System.nanoTime();
            kinds[caller] = kind;
            if (error != null) {
                synchronized (this) {
                    if (firstError == null) {
                        firstError = error.toString();
                    }
                }
            }
        }

        void next() {
            if (key != null) {
                score();
            }
            notStarted = new CountDownLatch(kinds.length);
            roundStartedAt = System.nanoTime();
            key = roundStartedAt < measureUntil ? PaymentCalls.freshKey() : null;
        }

        private void score() {
            boolean measured = roundStartedAt >= measureFrom;
            int winner = -1;
            int firstRuns = 0;
            int failed = 0;
            for (int i = 0; i < kinds.length; i++) {
                if (kinds[i] == FIRST_RUN) {
                    firstRuns++;
                    winner = i;
                } else if (kinds[i] == ERROR) {
                    failed++;
                }
            }
            if (failed > 0 || firstRuns != 1 || heldTooLong) {
                errors += Math.max(failed, 1);
                synchronized (this) {
                    if (firstError == null) {
                        firstError = heldTooLong ? "a caller did not start within " + HOLD_TIMEOUT_SECONDS + " s"
                                : "a round had " + firstRuns + " first runs";
                    }
                }
                heldTooLong = false;
                return;
            }
            if (!measured) {
                return;
            }
            long last = 0;
            for (int i = 0; i < kinds.length; i++) {
                if (i != winner) {
                    last = Math.max(last, returnedAt[i] - returnedAt[winner]);
                }
            }
            lastReplay.recordValue(Math.max(1_000L, Math.min(last, lastReplay.getHighestTrackableValue())));
            long lastStart = Arrays.stream(startedAt).max().orElse(roundStartedAt) - roundStartedAt;
            releaseSpread.recordValue(Math.max(1_000L, Math.min(lastStart, releaseSpread.getHighestTrackableValue())));
            measuredRounds++;
        }

        double releaseSpreadP99Millis() {
            return releaseSpread.getTotalCount() == 0 ? Double.NaN : releaseSpread.getValueAtPercentile(99) / 1e6;
        }

        Measurement result() {
            Measurement m = Measurement.of(lastReplay, (measureUntil - measureFrom) / 1e9, errors, firstError);
            return new Measurement(measuredRounds, m.opsPerSecond(), m.p50Millis(), m.p99Millis(), ClientCost.NONE,
                    errors, firstError);
        }
    }
}

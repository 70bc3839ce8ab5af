package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.jdbc.Sweeper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jdbi.v3.core.Jdbi;

/**
 * Section 8: what the sweeper costs. Outbox events are no longer deleted row by row (V4): a sweep
 * truncates a whole generation table once the relays consumed it and switches writers to it. So the
 * section measures (a) one rotation over a generation of {@code --sweeper-rows} consumed events (with a
 * tenth as many in the current generation, which must stay), (b) the writers while a sweeper rotates
 * every second under them, next to the same cell without it (both with a relay draining, as a rotation
 * needs), and (c) as before, how fast expired keys are purged and whether that keeps up with the relay:
 * at least {@value #RELAY_RATE} rows/s sustained, the rate three relays drained at in section 5 before V4
 * (benchmarks/HISTORY.md, 2026-11-21).
 */
final class SweeperThroughput implements Section {
    /** Three relays' drain rate to the no-op publisher on 2026-11-21 (before V4), rounded up: what the purge must follow. */
    static final double RELAY_RATE = 19_200;
    private static final String TITLE = "8 sweeper throughput";
    /** How often the sweeper rotates under the writers in (b). */
    private static final Duration ROTATION_INTERVAL = Duration.ofSeconds(1);

    /** A batch setting the section measures. */
    record Setting(String name, int batchSize, int maxBatchesPerSweep, Duration interval) {
        long rowsPerSweep() {
            return (long) batchSize * maxBatchesPerSweep;
        }

        /** Rows/s purged in steady state when a sweep of at most rowsPerSweep rows runs at {@code rate}, then waits the interval. */
        double sustained(double rate) {
            return rowsPerSweep() / (interval.toMillis() / 1000.0 + rowsPerSweep() / rate);
        }
    }

    static final List<Setting> SETTINGS = List.of(
            new Setting("defaults", Sweeper.DEFAULT_BATCH_SIZE, Sweeper.DEFAULT_MAX_BATCHES_PER_SWEEP, Sweeper.DEFAULT_INTERVAL),
            new Setting("larger", 20_000, 1_000, Sweeper.DEFAULT_INTERVAL));

    @Override
    public String name() {
        return "sweeper";
    }

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        int rows = run.settings().sweeperRows();
        List<ResultRow> result = new ArrayList<>();

        Measurement rotation = run.cell("sweeper rotation (" + rows + " consumed events)", 1, () -> rotate(run, rows));
        result.add(new ResultRow(TITLE, "rotate: truncate a consumed generation of " + rows + " events", 1, rotation.opsPerSecond(),
                null, null, ClientCost.NONE, String.format(Locale.ROOT, "%.0f ms for the sweepOnce() that rotated (count of the "
                        + "generation, lock, truncate, switch); %d events in the current generation kept",
                        1000.0 * rows / rotation.opsPerSecond(), Math.max(1, rows / 10)),
                "reported only: no per-row purge of events any more"));

        Measurement withRelay = RelayCost.executorWithRelay(run, RelayCost.WITH_RELAY_CELL, null);
        RotationFacts facts = new RotationFacts();
        Measurement rotating = RelayCost.executorWithRelay(run, RelayCost.WITH_RELAY_CELL + ", sweeper rotating every "
                + ROTATION_INTERVAL.toSeconds() + " s", () -> rotateEvery(run, facts));
        result.add(ResultRow.of(TITLE, RelayCost.WITH_RELAY_CELL, RelayCost.WRITERS, withRelay));
        result.add(ResultRow.of(TITLE, RelayCost.WITH_RELAY_CELL + ", sweeper rotating every " + ROTATION_INTERVAL.toSeconds() + " s",
                        RelayCost.WRITERS, rotating)
                .compared(String.format(Locale.ROOT, "with/without rotations: ops %s, p99 %s; %d rotations removed %d events, "
                                + "longest sweepOnce() %.0f ms%s",
                        Targets.format(Targets.ratio(rotating.opsPerSecond(), withRelay.opsPerSecond())),
                        Targets.format(Targets.ratio(rotating.p99Millis(), withRelay.p99Millis())), facts.rotations.get(),
                        facts.removed.get(), facts.longestNanos.get() / 1e6,
                        run.settings().repeat() > 1 ? " (of the last run)" : ""))
                .target("reported only"));

        for (Setting setting : SETTINGS) {
            Measurement m = run.cell("sweeper purge expired keys (" + rows + " rows, " + setting.name() + ")", 1,
                    () -> purgeKeys(run, setting, rows));
            double sustained = setting.sustained(m.opsPerSecond());
            String compared = String.format(Locale.ROOT, "%.1f s; batches of %d, at most %d per sweep, every %d s: sustains %.0f rows/s",
                    m.operations() / m.opsPerSecond(), setting.batchSize(), setting.maxBatchesPerSweep(),
                    setting.interval().toSeconds(), sustained);
            result.add(new ResultRow(TITLE, "purge " + rows + " expired keys, " + setting.name(), 1, m.opsPerSecond(),
                    null, null, ClientCost.NONE, compared, "")
                    .target(Targets.verdict(sustained >= RELAY_RATE, String.format(Locale.ROOT, "sustained >= %.0f rows/s", RELAY_RATE))));
        }
        run.note("Section 8: events are removed a generation table at a time (V4). The rotation row: " + rows + " events in "
                + "the generation a rotation empties and a tenth as many in the current one, written and VACUUM ANALYZEd, with "
                + "relay positions that have consumed them all, then one Sweeper.sweepOnce() timed (events/s = events removed "
                + "per second of it); the section checks that exactly the next generation went and writers were switched to it. "
                + "The rotating row: the section 9 cell (executor.run at " + RelayCost.WRITERS + " callers, one relay draining) "
                + "with a Sweeper (publishedEventRetention 0, so each sweep rotates once the next generation is consumed) "
                + "calling sweepOnce() every " + ROTATION_INTERVAL.toSeconds() + " s on a connection of its own. Keys: the "
                + "table holds the keys past retention plus a tenth as many that must stay (checked after); ops/s is rows purged "
                + "per second of back-to-back sweepOnce() calls on one connection; 'sustains' is what a started sweeper keeps up "
                + "with: rows per sweep / (interval + their purge time). The target is three relays' drain rate in the README's "
                + "section 5.");
        return result;
    }

    /** What the sweeper did under the writers: rotations, events they removed, the longest sweep. */
    private static final class RotationFacts {
        final AtomicLong rotations = new AtomicLong();
        final AtomicLong removed = new AtomicLong();
        final AtomicLong longestNanos = new AtomicLong();
    }

    /** A thread calling sweepOnce() every interval until closed; the first failure fails the cell. */
    private static AutoCloseable rotateEvery(BenchmarkRun run, RotationFacts facts) {
        HikariDataSource pool = run.database().pool("sweeper-rotating", 1);
        Sweeper sweeper = Sweeper.builder(pool).schema(run.database().schema()).publishedEventRetention(Duration.ZERO).build();
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        facts.rotations.set(0);
        facts.removed.set(0);
        facts.longestNanos.set(0);
        Thread thread = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    long started = System.nanoTime();
                    int removed = sweeper.sweepOnce().eventsPurged();
                    facts.longestNanos.accumulateAndGet(System.nanoTime() - started, Math::max);
                    if (removed > 0) {
                        facts.rotations.incrementAndGet();
                        facts.removed.addAndGet(removed);
                    }
                    Thread.sleep(ROTATION_INTERVAL.toMillis());
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                    return;
                }
            }
        }, "sweeper-rotating");
        thread.start();
        return () -> {
            thread.interrupt();
            thread.join(TimeUnit.SECONDS.toMillis(30));
            sweeper.close();
            pool.close();
            if (failure.get() != null) {
                throw new IllegalStateException("the sweeper failed under the writers: " + failure.get().getMessage(), failure.get());
            }
        };
    }

    /** One rotation over {@code rows} consumed events in the next generation; the rate is events removed per second. */
    private static Measurement rotate(BenchmarkRun run, int rows) {
        String schema = run.database().schema();
        int liveRows = Math.max(1, rows / 10);
        try (HikariDataSource pool = run.database().pool("sweeper", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            int before = jdbi.withHandle(h -> ((Number) h.createQuery(BenchmarkSql.render(BenchmarkSql.GENERATION_STATE, schema))
                    .mapToMap().one().get("generation")).intValue());
            jdbi.useHandle(h -> {
                h.useTransaction(tx -> {
                    tx.execute(BenchmarkSql.render(RelayBenchSql.LOCK_FOR_BULK_WRITE, schema));
                    tx.createUpdate(BenchmarkSql.render(BenchmarkSql.FILL_GENERATIONS, schema))
                            .bind("rows", rows).bind("liveRows", liveRows).execute();
                });
                h.createUpdate(BenchmarkSql.render(BenchmarkSql.CONSUME_EVERYTHING, schema))
                        .bind("partitions", run.settings().relay().partitions()).execute();
                h.execute(BenchmarkSql.render(BenchmarkSql.ROTATION_DUE, schema));
                h.execute(BenchmarkSql.render(BenchmarkSql.VACUUM_SWEPT_TABLES, schema));
            });
            Sweeper sweeper = Sweeper.builder(pool).schema(schema).build();
            long started = System.nanoTime();
            int removed = sweeper.sweepOnce().eventsPurged();
            double seconds = (System.nanoTime() - started) / 1e9;
            Map<String, Object> after = jdbi.withHandle(h -> h.createQuery(BenchmarkSql.render(BenchmarkSql.GENERATION_STATE, schema))
                    .mapToMap().one());
            int generation = ((Number) after.get("generation")).intValue();
            long left = ((Number) after.get("events")).longValue();
            if (removed != rows || left != liveRows || generation != (before + 1) % 3) {
                throw new IllegalStateException("the rotation removed " + removed + " of " + rows + " events, left " + left
                        + " where " + liveRows + " must stay, and moved writers from generation " + before + " to " + generation);
            }
            return new Measurement(rows, rows / seconds, Double.NaN, Double.NaN, ClientCost.NONE, 0, null);
        }
    }

    private static Measurement purgeKeys(BenchmarkRun run, Setting setting, int rows) {
        String schema = run.database().schema();
        int liveRows = Math.max(1, rows / 10);
        try (HikariDataSource pool = run.database().pool("sweeper", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            jdbi.useHandle(h -> h.createUpdate(BenchmarkSql.render(BenchmarkSql.FILL_EXPIRED_KEYS, schema))
                    .bind("rows", rows).bind("liveRows", liveRows).execute());
            jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.VACUUM_SWEPT_TABLES, schema)));
            Sweeper sweeper = Sweeper.builder(pool).schema(schema)
                    .batchSize(setting.batchSize()).maxBatchesPerSweep(setting.maxBatchesPerSweep()).build();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + TimeUnit.MILLISECONDS.toNanos(rows);
            long purged = 0;
            long started = System.nanoTime();
            for (int last = -1; last != 0; ) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the sweeper did not purge " + rows + " expired keys in time: " + purged + " purged");
                }
                last = sweeper.sweepOnce().keysPurged();
                purged += last;
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            long remaining = jdbi.withHandle(h -> h.createQuery(BenchmarkSql.render(BenchmarkSql.COUNT_KEYS, schema))
                    .mapTo(Long.class).one());
            if (purged != rows || remaining != liveRows) {
                throw new IllegalStateException("the sweeper purged " + purged + " of " + rows + " expired keys and left "
                        + remaining + " where " + liveRows + " must stay");
            }
            return new Measurement(rows, rows / seconds, Double.NaN, Double.NaN, ClientCost.NONE, 0, null);
        }
    }
}

package dev.idempotency.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.jdbc.Sweeper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;
import org.jdbi.v3.core.Jdbi;

/**
 * Section 8: how fast the sweeper purges, and whether that keeps up with the relay. A table holding
 * {@code --sweeper-rows} rows past retention (and a tenth as many it must keep) is swept with
 * back-to-back {@link Sweeper#sweepOnce()} calls until nothing is left to purge, at the library's
 * default batch settings and at a larger one. What it sustains when started is lower: each sweep
 * purges at most batch size x batches per sweep, and then waits one interval. Target: sustained at
 * least {@value #RELAY_RATE} rows/s, the rate three relays drained at in the README's section 5.
 */
final class SweeperThroughput implements Section {
    /** Three relays' drain rate to the no-op publisher in the README's run, rounded up: what the purge must follow. */
    static final double RELAY_RATE = 19_200;
    private static final String TITLE = "8 sweeper throughput";

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

    private enum Kind {
        PUBLISHED_EVENTS("published events", BenchmarkSql.FILL_PUBLISHED_EVENTS, Sweeper.Result::eventsPurged),
        EXPIRED_KEYS("expired keys", BenchmarkSql.FILL_EXPIRED_KEYS, Sweeper.Result::keysPurged);

        final String label;
        final String fill;
        final ToIntFunction<Sweeper.Result> purged;

        Kind(String label, String fill, ToIntFunction<Sweeper.Result> purged) {
            this.label = label;
            this.fill = fill;
            this.purged = purged;
        }
    }

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
        for (Kind kind : Kind.values()) {
            for (Setting setting : SETTINGS) {
                Measurement m = run.cell("sweeper purge " + kind.label + " (" + rows + " rows, " + setting.name() + ")", 1,
                        () -> purge(run, kind, setting, rows));
                double sustained = setting.sustained(m.opsPerSecond());
                String compared = String.format(Locale.ROOT, "%.1f s; batches of %d, at most %d per sweep, every %d s: sustains %.0f rows/s",
                        m.operations() / m.opsPerSecond(), setting.batchSize(), setting.maxBatchesPerSweep(),
                        setting.interval().toSeconds(), sustained);
                result.add(new ResultRow(TITLE, "purge " + rows + " " + kind.label + ", " + setting.name(), 1, m.opsPerSecond(),
                        null, null, null, compared, "")
                        .target(Targets.verdict(sustained >= RELAY_RATE, String.format(Locale.ROOT, "sustained >= %.0f rows/s", RELAY_RATE))));
            }
        }
        run.note("Section 8: the table holds the rows past retention plus a tenth as many that must stay (checked after), "
                + "written and VACUUM ANALYZEd before the timed part; ops/s is rows purged per second of back-to-back sweepOnce() "
                + "calls on one connection; 'sustains' is what a started sweeper keeps up with: rows per sweep / (interval + "
                + "their purge time). The target is three relays' drain rate in the README's section 5.");
        return result;
    }

    private static Measurement purge(BenchmarkRun run, Kind kind, Setting setting, int rows) {
        String schema = run.database().schema();
        int liveRows = Math.max(1, rows / 10);
        try (HikariDataSource pool = run.database().pool("sweeper", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            jdbi.useHandle(h -> h.createUpdate(BenchmarkSql.render(kind.fill, schema))
                    .bind("rows", rows).bind("liveRows", liveRows).execute());
            jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.VACUUM_SWEPT_TABLES, schema)));
            Sweeper sweeper = Sweeper.builder(pool).schema(schema)
                    .batchSize(setting.batchSize()).maxBatchesPerSweep(setting.maxBatchesPerSweep()).build();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + TimeUnit.MILLISECONDS.toNanos(rows);
            long purged = 0;
            long started = System.nanoTime();
            for (int last = -1; last != 0; ) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the sweeper did not purge " + rows + " " + kind.label + " in time: " + purged + " purged");
                }
                last = kind.purged.applyAsInt(sweeper.sweepOnce());
                purged += last;
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            Map<String, Object> left = jdbi.withHandle(h -> h.createQuery(BenchmarkSql.render(BenchmarkSql.COUNT_SWEPT_TABLES, schema))
                    .mapToMap().one());
            long remaining = ((Number) left.get(kind == Kind.PUBLISHED_EVENTS ? "events" : "keys")).longValue();
            if (purged != rows || remaining != liveRows) {
                throw new IllegalStateException("the sweeper purged " + purged + " of " + rows + " " + kind.label + " and left "
                        + remaining + " where " + liveRows + " must stay");
            }
            return new Measurement(rows, rows / seconds, Double.NaN, Double.NaN, Double.NaN, 0, null);
        }
    }
}

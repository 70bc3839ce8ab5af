package dev.idempotency.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxRelay;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Section 9: what the relay costs the service's own database (issue 13's baseline). (a) The
 * executor's throughput at 8 callers while one relay drains what they write, over the same
 * executor cell with no relay: target at least 0.90. (b) WAL bytes per event of a drain of a
 * backlog written beforehand, and (c) the dead tuples that drain leaves in the outbox, with
 * autovacuum off on the run's outbox table. (b) and (c) are reported only.
 */
final class RelayCost implements Section {
    static final String TITLE = "9 relay cost";
    static final double WRITER_RATIO_FLOOR = 0.90;
    /** The caller count of the writers' cost cells, as issue 13 states it. */
    static final int WRITERS = 8;
    static final String WITH_RELAY_CELL = "executor.run: payment + outbox event, 1 relay draining it";
    /** Longest wait for the relays' statistics to reach the shared counters once their connections closed. */
    private static final long STATS_WAIT_MILLIS = 30_000;
    /** How long the cluster's WAL is sampled with no relay running, just before the drain. */
    private static final long QUIET_SAMPLE_MILLIS = 1_000;
    private static final Logger log = LoggerFactory.getLogger(RelayCost.class);

    @Override
    public String name() {
        return "relaycost";
    }

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        Measurement alone = PaymentCalls.executor(run, WRITERS);
        long[] relayFacts = new long[2];
        Measurement withRelay = executorWithRelay(run, relayFacts);
        double ratio = Targets.ratio(withRelay.opsPerSecond(), alone.opsPerSecond());
        rows.add(ResultRow.of(TITLE, PaymentCalls.EXECUTOR_CELL + ", no relay", WRITERS, alone));
        rows.add(ResultRow.of(TITLE, WITH_RELAY_CELL, WRITERS, withRelay)
                .compared(String.format(Locale.ROOT, "with/without relay: ops %s; relay published %d, %d pending at the end%s",
                        Targets.format(ratio), relayFacts[0], relayFacts[1],
                        run.settings().repeat() > 1 ? " (of the last run)" : ""))
                .target(Targets.atLeast("ops ratio", ratio, WRITER_RATIO_FLOOR)));

        int events = run.settings().relay().costEvents();
        DrainCost cost = drainCost(run, events);
        rows.add(new ResultRow(TITLE, "drain " + events + " events: WAL bytes per event", 1, cost.eventsPerSecond, null, null, null,
                String.format(Locale.ROOT, "WAL %.1f bytes/event (%.1f MB over the drain; %.2f WAL records and %.3f "
                                + "full-page images per event; the cluster wrote %.1f kB/s in the second before, with no relay)",
                        cost.walBytes / events, cost.walBytes / 1e6, cost.walRecords / events, cost.fullPageImages / events,
                        cost.quietWalBytesPerSecond / 1e3), "reported only"));
        rows.add(new ResultRow(TITLE, "drain " + events + " events: dead tuples left in the outbox", 1, null, null, null, null,
                String.format(Locale.ROOT, "n_dead_tup %.0f (%.2f per event); n_tup_upd +%.0f, HOT +%.0f; table+indexes %.1f -> %.1f MB%s",
                        cost.deadTuples, cost.deadTuples / events, cost.updates, cost.hotUpdates, cost.bytesBefore / 1e6,
                        cost.bytesAfter / 1e6, cost.statsComplete ? "" : "; STATISTICS INCOMPLETE (see the log)"),
                "reported only"));
        run.note("Section 9: writers' cost = executor.run ops/s at " + WRITERS + " callers while one relay (pool of "
                + RelayBenchSettings.RELAY_POOL_SIZE + ", no-op publisher, woken by afterOutboxCommit(relay::wakeUp)) drains "
                + "their events, over the same cell without a relay, both in this run from emptied tables. "
                + "WAL: pg_wal_lsn_diff of pg_current_wal_lsn() taken just before the relay starts and just after the "
                + "backlog is 0 and the relay stopped, divided by the events. The backlog was written and VACUUM ANALYZEd "
                + "before (after the cell's CHECKPOINT), so the inserts' WAL is not counted, nor are full-page images of "
                + "pages the fill already touched unless a checkpoint starts during the drain (the full-page images column "
                + "of pg_stat_wal shows it). It counts everything the relay writes (lease and heartbeat rows, the published "
                + "marks and their index entries, commits) and any other WAL the cluster writes meanwhile (other databases "
                + "included: the quiet rate beside it is a 1 s sample of that before the drain). Records and full-page images "
                + "come from pg_stat_wal, read after the relay's counters arrived. Dead tuples: autovacuum off on the run's outbox table for the section "
                + "(ALTER TABLE ... SET (autovacuum_enabled = off), reset after); n_dead_tup of pg_stat_user_tables after "
                + "the drain. A backend sends its counters at most once a second and at exit, and "
                + "pg_stat_force_next_flush() flushes only the calling backend's, so the section closes the relay's "
                + "connections and waits until n_tup_upd has counted an update per event before reading.");
        return rows;
    }

    /** The executor at {@link #WRITERS} callers with one relay in the same JVM publishing what they commit. */
    private static Measurement executorWithRelay(BenchmarkRun run, long[] relayFacts) throws Exception {
        return run.cell(WITH_RELAY_CELL, WRITERS, () -> {
            AtomicLong published = new AtomicLong();
            try (HikariDataSource relayPool = run.database().pool("cost-relay", RelayBenchSettings.RELAY_POOL_SIZE);
                 HikariDataSource executorPool = run.database().pool("cost-executor", WRITERS);
                 HikariDataSource monitorPool = run.database().pool("cost-backlog", 1)) {
                OutboxRelay relay = OutboxRelay.builder(relayPool, new CountingPublisher(new NoOpPublisher(), published))
                        .config(RelayDrain.config(run, "bench-cost")).build();
                PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(executorPool)
                        .config(run.executorConfig()).afterOutboxCommit(relay::wakeUp).build();
                String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
                relay.start();
                try {
                    Measurement m = ClosedLoopLoad.run("executor-with-relay", WRITERS, run.warmup(PaymentCalls.EXECUTOR_CELL),
                            run.settings().window(), () -> PaymentCalls.executorCall(executor, insertPayment, PaymentCalls.freshKey()));
                    relayFacts[0] = published.get();
                    relayFacts[1] = OutboxBacklog.builder(monitorPool).schema(run.database().schema()).build().pendingCount();
                    return m;
                } finally {
                    relay.stop();
                }
            }
        });
    }

    /** What one drain cost the database: its rate, WAL and dead tuples, and the counters they come from. */
    private record DrainCost(double eventsPerSecond, double walBytes, double walRecords, double fullPageImages,
                             double quietWalBytesPerSecond, double deadTuples, double updates, double hotUpdates,
                             double bytesBefore, double bytesAfter, boolean statsComplete) {
    }

    /** Medians over the repetitions of a drain of {@code events} written beforehand. */
    private static DrainCost drainCost(BenchmarkRun run, int events) throws Exception {
        List<DrainCost> runs = new ArrayList<>();
        String schema = run.database().schema();
        try (HikariDataSource pool = run.database().pool("cost-stats", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            jdbi.useHandle(h -> h.execute(BenchmarkSql.render(RelayCostSql.AUTOVACUUM_OFF, schema)));
            try {
                run.cell("relay drain cost (" + events + " events)", 1, () -> {
                    DrainCost cost = drainOnce(run, jdbi, events);
                    runs.add(cost);
                    return RelayThroughput.drained(events, events / cost.eventsPerSecond);
                });
            } finally {
                jdbi.useHandle(h -> h.execute(BenchmarkSql.render(RelayCostSql.AUTOVACUUM_RESET, schema)));
            }
        }
        return new DrainCost(median(runs, DrainCost::eventsPerSecond), median(runs, DrainCost::walBytes),
                median(runs, DrainCost::walRecords), median(runs, DrainCost::fullPageImages),
                median(runs, DrainCost::quietWalBytesPerSecond),
                median(runs, DrainCost::deadTuples), median(runs, DrainCost::updates), median(runs, DrainCost::hotUpdates),
                median(runs, DrainCost::bytesBefore), median(runs, DrainCost::bytesAfter),
                runs.stream().allMatch(DrainCost::statsComplete));
    }

    private static DrainCost drainOnce(BenchmarkRun run, Jdbi jdbi, int events) throws Exception {
        String schema = run.database().schema();
        RelayDrain.fill(run, events);
        // What the cluster writes with no relay running, so that a reader can tell others' WAL from the relay's.
        String lsnQuiet = currentLsn(jdbi);
        Thread.sleep(QUIET_SAMPLE_MILLIS);
        long[] before = jdbi.withHandle(h -> stats(h, schema));
        long[] walBefore = jdbi.withHandle(RelayCost::walStats);
        String lsnBefore = currentLsn(jdbi);
        double quietBytesPerSecond = walBetween(jdbi, lsnQuiet, lsnBefore) * 1000.0 / QUIET_SAMPLE_MILLIS;
        double seconds = RelayDrain.drain(run, 1, NoOpPublisher::new, events);
        long walBytes = walBetween(jdbi, lsnBefore, currentLsn(jdbi));
        // The relay's backends report their counters when their connections close; wait until every mark is counted.
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STATS_WAIT_MILLIS);
        long[] after = jdbi.withHandle(h -> stats(h, schema));
        while (after[1] - before[1] < events && System.nanoTime() < deadline) {
            Thread.sleep(100);
            after = jdbi.withHandle(h -> stats(h, schema));
        }
        boolean complete = after[1] - before[1] >= events;
        if (!complete) {
            log.warn("the outbox's statistics counted {} updates for {} events relayed after {} ms; dead tuples may be undercounted",
                    after[1] - before[1], events, STATS_WAIT_MILLIS);
        }
        long[] walAfter = jdbi.withHandle(RelayCost::walStats);
        return new DrainCost(events / seconds, walBytes, walAfter[0] - walBefore[0], walAfter[1] - walBefore[1],
                quietBytesPerSecond, after[0], after[1] - before[1], after[2] - before[2], before[3], after[3], complete);
    }

    private static String currentLsn(Jdbi jdbi) {
        return jdbi.withHandle(h -> h.createQuery(RelayCostSql.CURRENT_WAL_LSN).mapTo(String.class).one());
    }

    private static long walBetween(Jdbi jdbi, String before, String after) {
        return jdbi.withHandle(h -> h.createQuery(RelayCostSql.WAL_BYTES_BETWEEN)
                .bind("after", after).bind("before", before).mapTo(Long.class).one());
    }

    /** wal_records and wal_fpi of pg_stat_wal. */
    private static long[] walStats(Handle h) {
        return h.createQuery(RelayCostSql.WAL_STATS).map((rs, ctx) -> new long[] {rs.getLong(1), rs.getLong(2)}).one();
    }

    /** n_dead_tup, n_tup_upd, n_tup_hot_upd and total bytes of the run's outbox table. */
    private static long[] stats(Handle h, String schema) {
        return h.createQuery(RelayCostSql.OUTBOX_STATS).bind("schema", schema)
                .map((rs, ctx) -> new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)}).one();
    }

    private static double median(List<DrainCost> runs, ToDoubleFunction<DrainCost> figure) {
        List<Double> values = new ArrayList<>();
        runs.forEach(c -> values.add(figure.applyAsDouble(c)));
        values.sort(Comparator.naturalOrder());
        int middle = values.size() / 2;
        return values.size() % 2 == 1 ? values.get(middle) : (values.get(middle - 1) + values.get(middle)) / 2;
    }
}

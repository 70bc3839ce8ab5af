package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.ClosedLoopLoad;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxRelay;
import java.util.ArrayList;
import java.util.Arrays;
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
 * Section 9: what the relay costs the service's own database (issue 13). (a) The executor's throughput
 * at 8 callers while one relay drains what they write, over the same executor cell with no relay:
 * target at least 0.95 (issue 38; 0.90 in issue 13). (b) WAL bytes per event of a drain of a backlog written beforehand, and (c)
 * the dead tuples that drain leaves in the outbox, with autovacuum off on the outbox's tables. (b) and
 * (c) are reported only.
 */
final class RelayCost implements Section {
    static final String TITLE = "9 relay cost";
    static final double WRITER_RATIO_FLOOR = 0.95;
    /** The caller count of the writers' cost cells, as issue 13 states it. */
    static final int WRITERS = 8;
    static final String WITH_RELAY_CELL = "executor.run: payment + outbox event, 1 relay draining it";
    /** The V4 outbox's tables that hold events: the three generations and the retries. */
    static final List<String> V4_OUTBOX_TABLES = List.of("outbox_events_0", "outbox_events_1", "outbox_events_2", "outbox_retries");
    /** The relay's positions and leases: rewritten once per batch by V4, per lease renewal by both. */
    static final String POSITIONS_TABLE = "outbox_relay_partitions";
    /** Longest wait for the relays' statistics to reach the shared counters once their connections closed. */
    private static final long STATS_WAIT_MILLIS = 30_000;
    /** Counters unchanged for this long (after the relay's connections closed) are taken as complete. */
    private static final long STATS_SETTLE_MILLIS = 1_500;
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
        List<Measurement> writers = run.interleaved(List.of(PaymentCalls.executorCell(run, WRITERS),
                executorWithRelayCell(run, WITH_RELAY_CELL, null)));
        Measurement alone = writers.get(0);
        Measurement withRelay = writers.get(1);
        rows.add(ResultRow.of(TITLE, PaymentCalls.EXECUTOR_CELL + ", no relay", WRITERS, alone));
        rows.add(writersRow(run, WITH_RELAY_CELL, withRelay, alone));
        rows.add(RelayOnOffSlices.measure(run));

        int events = run.settings().relay().costEvents();
        DrainCost cost = drainCost(run, events);
        String bySchema = Double.isNaN(cost.schemaWalBytes) ? "WAL of the outbox's schema not read (no pg_waldump or pg_wal here); "
                : String.format(Locale.ROOT, "WAL of the outbox's schema %.1f bytes/event (%.2f records and %.3f full-page images "
                        + "per event, pg_waldump); ", cost.schemaWalBytes / events, cost.schemaWalRecords / events,
                        cost.schemaWalImages / events);
        rows.add(new ResultRow(TITLE, "drain " + events + " events: WAL bytes per event", 1,
                cost.eventsPerSecond, null, null, ClientCost.NONE,
                bySchema + String.format(Locale.ROOT, "whole cluster %.1f bytes/event (%.1f MB over the drain; %.2f WAL records and %.3f "
                                + "full-page images per event; the cluster wrote %.1f kB/s in the second before, with no relay)",
                        cost.walBytes / events, cost.walBytes / 1e6, cost.walRecords / events, cost.fullPageImages / events,
                        cost.quietWalBytesPerSecond / 1e3), "reported only"));
        rows.add(new ResultRow(TITLE, "drain " + events + " events: dead tuples left in the outbox", 1,
                null, null, null, ClientCost.NONE,
                String.format(Locale.ROOT, "dead row versions made %.0f (%.2f per event: n_tup_upd +%.0f, HOT +%.0f, n_tup_del +%.0f); "
                                + "n_dead_tup after %.0f (%.2f per event; on-access pruning may already have reclaimed some heap space, "
                                + "not index entries); %s; table+indexes %.1f -> %.1f MB; %s: n_dead_tup %.0f, n_tup_upd +%.0f%s",
                        cost.updates + cost.deletes, (cost.updates + cost.deletes) / events, cost.updates, cost.hotUpdates,
                        cost.deletes, cost.deadTuples, cost.deadTuples / events, String.join(", ", V4_OUTBOX_TABLES),
                        cost.bytesBefore / 1e6, cost.bytesAfter / 1e6, POSITIONS_TABLE, cost.positionsDeadTuples,
                        cost.positionsUpdates, cost.statsComplete ? "" : "; STATISTICS INCOMPLETE (see the log)"),
                "reported only"));
        run.note("Section 9: writers' cost = executor.run ops/s at " + WRITERS + " callers while one relay (pool of "
                + RelayBenchSettings.RELAY_POOL_SIZE + ", no-op publisher, woken by afterOutboxCommit(relay::wakeUp)) drains "
                + "their events, over the same cell without a relay on the same schema, all in this run from emptied tables. "
                + "WAL: pg_wal_lsn_diff of pg_current_wal_lsn() taken just before the relay starts and just after the "
                + "backlog is 0 and the relay stopped, divided by the events. The backlog was written and VACUUM ANALYZEd "
                + "before (after the cell's CHECKPOINT), so the inserts' WAL is not counted, nor are full-page images of "
                + "pages the fill already touched unless a checkpoint starts during the drain (the full-page images column "
                + "of pg_stat_wal shows it). It counts everything the relay writes (lease and heartbeat rows, positions and "
                + "their index entries, commits) and any other WAL the cluster writes meanwhile (other "
                + "databases included: the quiet rate beside it is a 1 s sample of that before the drain). Records and "
                + "full-page images come from pg_stat_wal, read after the relay's counters arrived. 'WAL of the outbox's schema' "
                + "is what the other sessions on a shared server cannot inflate: pg_waldump over the same range (segments kept by "
                + "a temporary replication slot), counting the records that touch a table, index or sequence of the run's "
                + "schema and the commit records of their transactions (the relay's lease and position writes). Dead tuples: autovacuum "
                + "off on the outbox's tables for the section (ALTER TABLE ... SET (autovacuum_enabled = off), reset after); "
                + "n_dead_tup of pg_stat_user_tables after the drain, summed over the tables named in the row (the three "
                + "generation tables and outbox_retries), and beside it the relay's positions/lease table. A backend sends "
                + "its counters at most once a second and at exit, so the section closes the relay's connections and reads "
                + "once the counters stopped moving. Relay CPU: over the "
                + "whole with-relay cell (warm-up and window), the CPU time of the relay's own JVM threads (ThreadMXBean, "
                + "by thread name) and of its PostgreSQL backends (/proc/[pid]/stat of the pids pg_stat_activity lists "
                + "under the relay pool's application_name; only when the server runs on this host), over the elapsed "
                + "time times the cores.");
        return rows;
    }

    private static ResultRow writersRow(BenchmarkRun run, String measured, Measurement withRelay, Measurement alone) {
        RelayFacts facts = RelayFacts.of(run, measured);
        double ratio = Targets.ratio(withRelay.opsPerSecond(), alone.opsPerSecond());
        return ResultRow.of(TITLE, measured, WRITERS, withRelay)
                .compared(String.format(Locale.ROOT, "with/without relay: ops %s; %s; relay published %d, %d pending at the end%s",
                        Targets.format(ratio), facts.cpu.describe(), facts.published, facts.pending,
                        run.settings().repeat() > 1 ? " (of the last run)" : ""))
                .target(Targets.atLeast("ops ratio", ratio, WRITER_RATIO_FLOOR));
    }

    /** What a cell with a relay learned about it, for its row (of the last run when cells repeat). */
    static final class RelayFacts {
        long published;
        long pending;
        RelayCpu.Share cpu = RelayCpu.Share.NONE;

        /** The facts of the cell {@code cell} at {@link #WRITERS} callers in this run, whichever section measured it. */
        static RelayFacts of(BenchmarkRun run, String cell) {
            return run.cellFacts(cell, WRITERS, RelayFacts.class, RelayFacts::new);
        }
    }

    /** Work run beside the writers and the relay in a cell: started after the relay, closed after the load. */
    @FunctionalInterface
    interface Alongside {
        AutoCloseable start() throws Exception;
    }

    /**
     * The executor at {@link #WRITERS} callers with one relay in the same JVM publishing what they
     * commit, as the cell {@code cell}; {@code alongside} (or null) runs beside them (section 8's sweeper).
     */
    static Measurement executorWithRelay(BenchmarkRun run, String cell, Alongside alongside) throws Exception {
        return run.cell(executorWithRelayCell(run, cell, alongside));
    }

    /** The cell of {@link #executorWithRelay}, to measure interleaved with the cells it is compared with. */
    static BenchmarkRun.Cell executorWithRelayCell(BenchmarkRun run, String cell, Alongside alongside) {
        RelayFacts relayFacts = RelayFacts.of(run, cell);
        return new BenchmarkRun.Cell(cell, WRITERS, () -> {
            AtomicLong published = new AtomicLong();
            try (HikariDataSource relayPool = run.database().pool("cost-relay", RelayBenchSettings.RELAY_POOL_SIZE);
                 HikariDataSource executorPool = run.database().pool("cost-executor", WRITERS);
                 HikariDataSource monitorPool = run.database().pool("cost-backlog", 1)) {
                OutboxRelay relay = OutboxRelay.builder(relayPool, new CountingPublisher(new NoOpPublisher(), published))
                        .config(RelayDrain.config(run, "bench-cost")).build();
                PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(executorPool)
                        .config(run.executorConfig()).afterOutboxCommit(relay::wakeUp).build();
                String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
                RelayCpu cpu = RelayCpu.ofRelay("bench-cost", "cost-relay", monitorPool);
                relay.start();
                try {
                    Measurement m;
                    try (AutoCloseable beside = alongside == null ? null : alongside.start()) {
                        m = ClosedLoopLoad.run("executor-with-relay", WRITERS, run.settings().callerThreads(),
                                run.warmup(WITH_RELAY_CELL), run.settings().window(),
                                () -> PaymentCalls.executorCall(executor, insertPayment, PaymentCalls.freshKey()));
                    }
                    relayFacts.cpu = cpu.read();
                    relayFacts.published = published.get();
                    relayFacts.pending = OutboxBacklog.builder(monitorPool).schema(run.database().schema()).build().pendingCount();
                    return m;
                } finally {
                    relay.stop();
                }
            }
        });
    }

    /** What one drain cost the database: its rate, WAL and dead tuples, and the counters they come from. */
    record DrainCost(double eventsPerSecond, double walBytes, double walRecords, double fullPageImages,
                             double quietWalBytesPerSecond, double deadTuples, double updates, double hotUpdates,
                             double deletes, double bytesBefore, double bytesAfter, double positionsDeadTuples,
                             double positionsUpdates, double schemaWalBytes, double schemaWalRecords,
                             double schemaWalImages, boolean statsComplete) {
    }

    /** Medians over the repetitions of a drain of {@code events} written beforehand. */
    static DrainCost drainCost(BenchmarkRun run, int events) throws Exception {
        List<DrainCost> runs = new ArrayList<>();
        String schema = run.database().schema();
        try (HikariDataSource pool = run.database().pool("cost-stats", 1);
             HikariDataSource walPool = run.database().pool("cost-wal", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            setAutovacuum(jdbi, RelayCostSql.AUTOVACUUM_OFF, schema, V4_OUTBOX_TABLES);
            try {
                run.cell("relay drain cost (" + events + " events)", 1, () -> {
                    DrainCost cost = drainOnce(run, jdbi, Jdbi.create(walPool), events);
                    runs.add(cost);
                    return RelayThroughput.drained(events, events / cost.eventsPerSecond);
                });
            } finally {
                setAutovacuum(jdbi, RelayCostSql.AUTOVACUUM_RESET, schema, V4_OUTBOX_TABLES);
            }
        }
        return new DrainCost(median(runs, DrainCost::eventsPerSecond), median(runs, DrainCost::walBytes),
                median(runs, DrainCost::walRecords), median(runs, DrainCost::fullPageImages),
                median(runs, DrainCost::quietWalBytesPerSecond),
                median(runs, DrainCost::deadTuples), median(runs, DrainCost::updates), median(runs, DrainCost::hotUpdates),
                median(runs, DrainCost::deletes), median(runs, DrainCost::bytesBefore), median(runs, DrainCost::bytesAfter),
                median(runs, DrainCost::positionsDeadTuples), median(runs, DrainCost::positionsUpdates),
                median(runs, DrainCost::schemaWalBytes), median(runs, DrainCost::schemaWalRecords),
                median(runs, DrainCost::schemaWalImages), runs.stream().allMatch(DrainCost::statsComplete));
    }

    private static void setAutovacuum(Jdbi jdbi, String template, String schema, List<String> tables) {
        for (String table : tables) {
            jdbi.useHandle(h -> h.execute(BenchmarkSql.render(template, schema).replace("<table>", '"' + table + '"')));
        }
    }

    private static DrainCost drainOnce(BenchmarkRun run, Jdbi jdbi, Jdbi walSession, int events) throws Exception {
        String schema = run.database().schema();
        List<String> tables = V4_OUTBOX_TABLES;
        List<String> positions = List.of(POSITIONS_TABLE);
        RelayDrain.fill(run, events);
        // What the cluster writes with no relay running, so that a reader can tell others' WAL from the relay's.
        String lsnQuiet = currentLsn(jdbi);
        long[] quietLsn = new long[1];
        Thread.sleep(QUIET_SAMPLE_MILLIS);
        long[] before = jdbi.withHandle(h -> stats(h, schema, tables));
        long[] positionsBefore = jdbi.withHandle(h -> stats(h, schema, positions));
        long[] walBefore = jdbi.withHandle(RelayCost::walStats);
        SchemaWal.Attributed attributed = null;
        double seconds;
        long walBytes;
        try (SchemaWal schemaWal = SchemaWal.start(walSession)) {
            String lsnBefore = currentLsn(jdbi);
            quietLsn[0] = walBetween(jdbi, lsnQuiet, lsnBefore);
            seconds = RelayDrain.drain(run, 1, NoOpPublisher::new, events);
            walBytes = walBetween(jdbi, lsnBefore, currentLsn(jdbi));
            if (schemaWal != null) {
                attributed = schemaWal.since(schema, lsnBefore);
            }
        }
        double quietBytesPerSecond = quietLsn[0] * 1000.0 / QUIET_SAMPLE_MILLIS;
        // The relay's backends report their counters when their connections close: read once nothing has
        // moved for a while.
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STATS_WAIT_MILLIS);
        long[] after = jdbi.withHandle(h -> stats(h, schema, tables));
        long[] positionsAfter = jdbi.withHandle(h -> stats(h, schema, positions));
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline
                && System.nanoTime() - stableSince < TimeUnit.MILLISECONDS.toNanos(STATS_SETTLE_MILLIS)) {
            Thread.sleep(250);
            long[] now = jdbi.withHandle(h -> stats(h, schema, tables));
            long[] positionsNow = jdbi.withHandle(h -> stats(h, schema, positions));
            if (!Arrays.equals(now, after) || !Arrays.equals(positionsNow, positionsAfter)) {
                stableSince = System.nanoTime();
            }
            after = now;
            positionsAfter = positionsNow;
        }
        boolean complete = System.nanoTime() - stableSince >= TimeUnit.MILLISECONDS.toNanos(STATS_SETTLE_MILLIS);
        if (!complete) {
            log.warn("the outbox's statistics still moved {} ms after the drain of {} events; dead tuples may be undercounted",
                    STATS_WAIT_MILLIS, events);
        }
        long[] walAfter = jdbi.withHandle(RelayCost::walStats);
        return new DrainCost(events / seconds, walBytes, walAfter[0] - walBefore[0], walAfter[1] - walBefore[1],
                quietBytesPerSecond, after[0], after[1] - before[1], after[2] - before[2], after[4] - before[4],
                before[5], after[5], positionsAfter[0], positionsAfter[1] - positionsBefore[1],
                attributed == null ? Double.NaN : attributed.bytes(), attributed == null ? Double.NaN : attributed.records(),
                attributed == null ? Double.NaN : attributed.fullPageImages(), complete);
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

    /** n_dead_tup, n_tup_upd, n_tup_hot_upd, n_tup_ins, n_tup_del and total bytes of {@code tables}, summed. */
    private static long[] stats(Handle h, String schema, List<String> tables) {
        return h.createQuery(RelayCostSql.TABLE_STATS).bind("schema", schema).bindArray("tables", String.class, tables)
                .map((rs, ctx) -> new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5), rs.getLong(6)})
                .one();
    }

    private static double median(List<DrainCost> runs, ToDoubleFunction<DrainCost> figure) {
        List<Double> values = new ArrayList<>();
        runs.forEach(c -> values.add(figure.applyAsDouble(c)));
        values.sort(Comparator.naturalOrder());
        int middle = values.size() / 2;
        return values.size() % 2 == 1 ? values.get(middle) : (values.get(middle - 1) + values.get(middle)) / 2;
    }
}

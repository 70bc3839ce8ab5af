package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.Pgbench;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.jdbc.internal.PoolerProbe;
import java.util.ArrayList;
import java.util.List;
import org.jdbi.v3.core.Jdbi;

/**
 * Section 11: the executor behind the PgBouncer at {@code --pgbouncer-url} (1.21 or later, transaction
 * mode, max_prepared_statements above 0), in the two settings the README offers for PgBouncer: a
 * plain URL, whose named statements PgBouncer tracks, and {@code prepareThreshold=0}, which names none
 * and makes PostgreSQL parse and plan every statement. Measured in the same rounds as the executor
 * on its direct connection and as pgbench sending executor.sql through the same PgBouncer, so the
 * table shows what PgBouncer itself costs and what each setting costs on top. No target: issue 14's
 * are for a direct connection.
 */
final class ExecutorBehindPgBouncer implements Section {
    static final String NAME = "pgbouncer";
    static final String TRACKED_CELL = "executor.run through PgBouncer, plain URL (statements tracked)";
    static final String UNNAMED_CELL = "executor.run through PgBouncer, prepareThreshold=0";
    static final String PGBENCH_CELL = "pgbench executor.sql through PgBouncer";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String title() {
        return "11 executor behind PgBouncer";
    }

    /** It needs a PgBouncer the run is pointed at. */
    @Override
    public boolean runsByDefault() {
        return false;
    }

    /** The executor on its direct connection, through PgBouncer on a plain URL and with prepareThreshold=0, then pgbench through it. */
    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        requireTrackingPgBouncer(run);
        String plain = pgbouncerUrl(run);
        Pgbench throughPgBouncer = run.pgbench().connectingWith(run.database().libpqEnvironment(plain));
        return List.of(
                PaymentCalls.executorCell(run, callers),
                PaymentCalls.executorCellAt(run, callers, TRACKED_CELL, "executor-pgbouncer", plain),
                PaymentCalls.executorCellAt(run, callers, UNNAMED_CELL, "executor-pgbouncer-unnamed",
                        withParameter(plain, "prepareThreshold=0")),
                PaymentCalls.pgbenchCell(run, throughPgBouncer, PGBENCH_CELL, "executor.sql", callers));
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> measured = run.interleaved(cells(run, callers));
            Measurement direct = measured.get(0);
            Measurement tracked = measured.get(1);
            Measurement unnamed = measured.get(2);
            Measurement pgbench = measured.get(3);
            rows.add(ResultRow.of(title(), PaymentCalls.EXECUTOR_CELL, callers, direct));
            rows.add(ResultRow.of(title(), TRACKED_CELL, callers, tracked).compared(Targets.oursOverThis(direct, tracked)));
            rows.add(ResultRow.of(title(), UNNAMED_CELL, callers, unnamed).compared("plain URL/this: ops "
                    + Targets.format(Targets.ratio(tracked.opsPerSecond(), unnamed.opsPerSecond())) + ", p50 "
                    + Targets.format(Targets.ratio(tracked.p50Millis(), unnamed.p50Millis()))));
            rows.add(ResultRow.of(title(), PGBENCH_CELL, callers, pgbench).compared("plain URL/this: ops "
                    + Targets.format(Targets.ratio(tracked.opsPerSecond(), pgbench.opsPerSecond())) + "; prepareThreshold=0/this: ops "
                    + Targets.format(Targets.ratio(unnamed.opsPerSecond(), pgbench.opsPerSecond()))));
        }
        run.note("Section 11: through the PgBouncer at --pgbouncer-url (its own CPU is on the same machine, in no client "
                + "column). ours/this on the plain-URL row is the direct executor over it; pgbench sends executor.sql "
                + "through PgBouncer with its own prepared statements, which PgBouncer tracks.");
        return rows;
    }

    private static String pgbouncerUrl(BenchmarkRun run) {
        return run.settings().pgbouncerUrl().orElseThrow(() -> new IllegalStateException(
                "section " + NAME + " needs --pgbouncer-url"));
    }

    /** Refuses a PgBouncer that would hand the plain URL's named statements to other clients. */
    private static void requireTrackingPgBouncer(BenchmarkRun run) {
        try (HikariDataSource pool = run.database().pool(pgbouncerUrl(run), "pgbouncer-probe", 2)) {
            PoolerProbe.Verdict verdict = PoolerProbe.check(Jdbi.create(pool), "the benchmark");
            if (verdict != PoolerProbe.Verdict.TRACKED) {
                throw new IllegalStateException("--pgbouncer-url must reach a PgBouncer 1.21+ in transaction mode with "
                        + "max_prepared_statements > 0; the pooler check found " + verdict);
            }
        }
    }

    private static String withParameter(String jdbcUrl, String parameter) {
        return jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + parameter;
    }
}

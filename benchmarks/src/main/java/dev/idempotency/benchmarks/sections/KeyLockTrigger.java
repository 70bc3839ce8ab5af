package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkDatabase;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.EarlierSchema;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.util.ArrayList;
import java.util.List;

/**
 * Section 12: what migration V8 costs the executor. Since V8 the outbox takes the ordering key's lock
 * on every INSERT (a BEFORE INSERT trigger that locks the key and then draws the id), so that writers
 * other than the executor keep per-key order too; the executor still takes the same lock itself first,
 * and the trigger takes it again at once. At each caller count, in the same rounds: the executor on the
 * run's schema (every migration) and on a schema at V6 ({@link BenchmarkDatabase#earlierSchema}: no trigger,
 * the id from the column's default), and pgbench's executor.sql on each (the SQL's own share).
 * Reported only. Cells measured one after another on a busy machine can differ by more than the
 * trigger costs: {@link ExecutorPair} measures the two executors in the same moments instead.
 */
final class KeyLockTrigger implements Section {
    /** The last migration before the outbox's key-lock trigger (V8). */
    static final String PRE_V8_VERSION = "6";
    static final String PRE_V8_EXECUTOR_CELL = "executor.run, outbox without V8's key-lock trigger (V6)";
    static final String PGBENCH_CELL_SCRIPT = "executor.sql";
    static final String PRE_V8_PGBENCH_CELL = "pgbench executor.sql, outbox without V8's key-lock trigger (V6)";

    @Override
    public String name() {
        return "keylock";
    }

    @Override
    public String title() {
        return "12 outbox key-lock trigger (V8)";
    }

    /** A comparison for issue 34, run when named: --sections keylock. */
    @Override
    public boolean runsByDefault() {
        return false;
    }

    /** The executor and executor.sql on the run's schema, then both on the V6 schema. */
    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        EarlierSchema preV8 = run.database().earlierSchema(PRE_V8_VERSION, BenchmarkSql.TRUNCATE_TABLES);
        return List.of(PaymentCalls.executorCell(run, callers),
                PaymentCalls.pgbenchCell(run, PGBENCH_CELL_SCRIPT, callers),
                PaymentCalls.executorCellOn(run, callers, PRE_V8_EXECUTOR_CELL, "executor-v6", preV8.schema(),
                        preV8.executorConfig()),
                PaymentCalls.pgbenchCell(run, run.pgbench().onSchema(preV8.schema()), PRE_V8_PGBENCH_CELL,
                        PGBENCH_CELL_SCRIPT, callers));
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> m = run.interleaved(cells(run, callers));
            Measurement executor = m.get(0);
            Measurement pgbench = m.get(1);
            Measurement executorBefore = m.get(2);
            Measurement pgbenchBefore = m.get(3);
            rows.add(ResultRow.of(title(), PaymentCalls.EXECUTOR_CELL, callers, executor));
            rows.add(ResultRow.of(title(), PRE_V8_EXECUTOR_CELL, callers, executorBefore)
                    .compared(withOverWithout(executor, executorBefore)));
            rows.add(ResultRow.of(title(), "pgbench " + PGBENCH_CELL_SCRIPT, callers, pgbench));
            rows.add(ResultRow.of(title(), PRE_V8_PGBENCH_CELL, callers, pgbenchBefore)
                    .compared(withOverWithout(pgbench, pgbenchBefore)));
        }
        run.note("Section 12: the V6 schema is a second schema of the run migrated up to V6 only; its cells run in the "
                + "same rounds as the run's own, so both see the shared machine at the same moments.");
        return rows;
    }

    /** The figures with the trigger over those without, for the row measured without it. */
    private static String withOverWithout(Measurement with, Measurement without) {
        return "with trigger/without: ops " + Targets.format(Targets.ratio(with.opsPerSecond(), without.opsPerSecond()))
                + ", p50 " + Targets.format(Targets.ratio(with.p50Millis(), without.p50Millis()))
                + ", p99 " + Targets.format(Targets.ratio(with.p99Millis(), without.p99Millis()));
    }
}

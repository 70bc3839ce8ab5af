package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Section 2: what idempotency adds. At each caller count: the same payment insert in a bare Jdbi
 * transaction (and in pgbench's bare.sql), with the executor's added latency at p50 and p99, and
 * what the executor's statements add over bare.sql when pgbench sends them (the SQL's own share).
 * Target (issue 14): under 0.3 ms added at p50 with one caller.
 */
final class ExecutorOverhead implements Section {
    static final double ADDED_P50_CEILING_MILLIS = 0.3;

    @Override
    public String name() {
        return "overhead";
    }

    @Override
    public String title() {
        return "2 executor vs bare tx";
    }

    /**
     * The executor, the bare Jdbi transaction, pgbench's bare.sql, and pgbench's executor.sql: the same
     * statements from C, how much of the added latency the SQL itself costs.
     */
    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        return List.of(PaymentCalls.executorCell(run, callers), PaymentCalls.bareCell(run, callers),
                PaymentCalls.pgbenchCell(run, "bare.sql", callers), PaymentCalls.pgbenchCell(run, "executor.sql", callers));
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> m = run.interleaved(cells(run, callers));
            Measurement ours = m.get(0);
            Measurement bare = m.get(1);
            Measurement pgbench = m.get(2);
            Measurement pgbenchExecutor = m.get(3);
            double addedP50 = ours.p50Millis() - bare.p50Millis();
            double addedP99 = ours.p99Millis() - bare.p99Millis();
            rows.add(ResultRow.of(title(), PaymentCalls.EXECUTOR_CELL, callers, ours));
            ResultRow bareRow = ResultRow.of(title(), PaymentCalls.BARE_CELL, callers, bare)
                    .compared(String.format(Locale.ROOT, "executor adds p50 %+.3f ms, p99 %+.3f ms; ops %s of this",
                            addedP50, addedP99, Targets.format(Targets.ratio(ours.opsPerSecond(), bare.opsPerSecond()))));
            if (callers == 1) {
                bareRow = bareRow.target(Targets.below("added p50", addedP50, ADDED_P50_CEILING_MILLIS));
            }
            rows.add(bareRow);
            rows.add(ResultRow.of(title(), "pgbench bare.sql: payment", callers, pgbench)
                    .compared("bare Jdbi/this: ops " + Targets.format(Targets.ratio(bare.opsPerSecond(), pgbench.opsPerSecond()))
                            + ", p50 " + Targets.format(Targets.ratio(bare.p50Millis(), pgbench.p50Millis())))
                    .compared(String.format(Locale.ROOT, "pgbench executor.sql adds p50 %+.3f ms, p99 %+.3f ms",
                            pgbenchExecutor.p50Millis() - pgbench.p50Millis(), pgbenchExecutor.p99Millis() - pgbench.p99Millis())));
        }
        return rows;
    }
}

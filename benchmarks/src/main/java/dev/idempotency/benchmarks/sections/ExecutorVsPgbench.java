package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.util.ArrayList;
import java.util.List;

/**
 * Section 1: the executor against the physical limit. At each caller count: executor.run doing one
 * payment and one outbox event, then pgbench running the executor's exact statements
 * (executor.sql), shared's minimal four statements (executor-minimal.sql) and their fused form; and
 * the executor as it was before its claim carried the transaction's BEGIN (pgjdbc sending it), in
 * the same rounds, so the table shows what that saves; and the executor whose callback inserts on
 * plain JDBC, so it shows how much of the gap to pgbench is Jdbi's work in the callback.
 * Targets (issue 14): at least 0.95 of pgbench's executor.sql throughput up to 8 callers, 0.90 above.
 */
final class ExecutorVsPgbench implements Section {
    /** Up to {@link #MANY_CALLERS} callers. */
    static final double THROUGHPUT_FLOOR = 0.95;
    /** Above {@link #MANY_CALLERS}, where the client's CPU competes with 32 backends on the same cores. */
    static final double THROUGHPUT_FLOOR_MANY_CALLERS = 0.90;
    static final int MANY_CALLERS = 8;

    /** A pgbench script the executor is compared with, and its label in the table. */
    private record Reference(String script, String label) {
    }

    private static final String EXACT_SCRIPT = "executor.sql";
    private static final List<Reference> REFERENCES = List.of(
            new Reference(EXACT_SCRIPT, "pgbench executor.sql: our exact statements"),
            new Reference("executor-minimal.sql", "pgbench executor-minimal.sql: 4 statements"),
            new Reference("executor-fused.sql", "pgbench executor-fused.sql: 3 statements"));

    @Override
    public String name() {
        return "pgbench";
    }

    @Override
    public String title() {
        return "1 executor vs pgbench";
    }

    /**
     * The executor, then each reference script, then the executor with pgjdbc's BEGIN (what it was
     * before), then the executor with its callback's insert on plain JDBC.
     */
    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        List<BenchmarkRun.Cell> cells = new ArrayList<>(List.of(PaymentCalls.executorCell(run, callers)));
        REFERENCES.forEach(reference -> cells.add(PaymentCalls.pgbenchCell(run, reference.script(), callers)));
        cells.add(PaymentCalls.pgjdbcBeginCell(run, callers));
        cells.add(PaymentCalls.plainJdbcCallbackCell(run, callers));
        return cells;
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> measured = run.interleaved(cells(run, callers));
            Measurement ours = measured.get(0);
            rows.add(ResultRow.of(title(), PaymentCalls.EXECUTOR_CELL, callers, ours));
            for (int i = 0; i < REFERENCES.size(); i++) {
                Reference reference = REFERENCES.get(i);
                Measurement pgbench = measured.get(i + 1);
                double throughput = Targets.ratio(ours.opsPerSecond(), pgbench.opsPerSecond());
                ResultRow row = ResultRow.of(title(), reference.label(), callers, pgbench)
                        .compared(Targets.oursOverThis(ours, pgbench));
                if (reference.script().equals(EXACT_SCRIPT)) {
                    row = row.target(Targets.atLeast("ops ratio", throughput,
                            callers > MANY_CALLERS ? THROUGHPUT_FLOOR_MANY_CALLERS : THROUGHPUT_FLOOR));
                }
                rows.add(row);
            }
            Measurement before = measured.get(REFERENCES.size() + 1);
            rows.add(ResultRow.of(title(), PaymentCalls.PGJDBC_BEGIN_CELL, callers, before)
                    .compared(Targets.oursOverThis(ours, before) + ", client CPU "
                            + Targets.format(Targets.ratio(ours.client().cpuMicros(), before.client().cpuMicros()))));
            Measurement plainJdbc = measured.get(REFERENCES.size() + 2);
            Measurement exact = measured.get(1);
            rows.add(ResultRow.of(title(), PaymentCalls.PLAIN_JDBC_CALLBACK_CELL, callers, plainJdbc)
                    .compared(Targets.oursOverThis(ours, plainJdbc) + ", client CPU "
                            + Targets.format(Targets.ratio(ours.client().cpuMicros(), plainJdbc.client().cpuMicros()))
                            + "; this/executor.sql: ops " + Targets.format(Targets.ratio(plainJdbc.opsPerSecond(),
                            exact.opsPerSecond()))));
        }
        run.note("Section 1: executor.sql is the executor's statement sequence, statement for statement, in the "
                + "executor's flushes (pgbench pipelines); the minimal and fused scripts send their BEGIN with the claim "
                + "and their COMMIT with the last statements, the fewest round trips their work allows. The plain-JDBC "
                + "row is the same call with the callback's insert sent through a JDBC statement on the handle's "
                + "connection: its ratio to executor.sql is the executor's without Jdbi's work in the callback.");
        return rows;
    }
}

package dev.idempotency.benchmarks.harness;

import java.util.List;

/**
 * One section of the benchmark table: a question (e.g. "how close is the executor to pgbench?")
 * answered by a few measured rows. New sections are new implementations listed in
 * {@link dev.idempotency.benchmarks.sections.Sections}.
 */
public interface Section {

    /** The name that selects it with --sections. */
    String name();

    /** The heading of its rows in the table, e.g. "1 executor vs pgbench". */
    String title();

    /** Whether a run that names no sections runs it; false for one that needs a service the run is pointed at. */
    default boolean runsByDefault() {
        return true;
    }

    /**
     * The cells its rows compare at {@code callers}, which the run measures in the same rounds as every
     * other section's ({@link BenchmarkRun#measureTogether}); none for a section that measures alone.
     */
    default List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) throws Exception {
        return List.of();
    }

    /** Measures and returns its rows; shared cells (such as the executor's) come from the run's cache. */
    List<ResultRow> run(BenchmarkRun run) throws Exception;
}

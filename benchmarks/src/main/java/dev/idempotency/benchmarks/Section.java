package dev.idempotency.benchmarks;

import java.util.List;

/**
 * One section of the benchmark table: a question (e.g. "how close is the executor to pgbench?")
 * answered by a few measured rows. New sections are new implementations listed in {@link Sections}.
 */
interface Section {

    /** The name that selects it with --sections. */
    String name();

    /** The heading of its rows in the table, e.g. "1 executor vs pgbench". */
    String title();

    /** Measures and returns its rows; shared cells (such as the executor's) come from the run's cache. */
    List<ResultRow> run(BenchmarkRun run) throws Exception;
}

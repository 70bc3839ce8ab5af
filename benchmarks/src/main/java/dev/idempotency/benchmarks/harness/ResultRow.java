package dev.idempotency.benchmarks.harness;

/**
 * One line of the table: what was measured at how many callers, its rate and latency percentiles
 * (null where a figure does not apply), what the client spent per operation ({@link ClientCost#NONE}
 * where none was measured), how it compares, and whether its target is met.
 */
public record ResultRow(String section, String measured, int callers, Double opsPerSecond, Double p50Millis,
                 Double p99Millis, ClientCost client, String compared, String target) {

    /** A row for a measurement, with nothing compared yet. */
    public static ResultRow of(String section, String measured, int callers, Measurement m) {
        return new ResultRow(section, measured, callers, m.opsPerSecond(), m.p50Millis(), m.p99Millis(), m.client(),
                m.errors() > 0 ? "ERRORS: " + m.errors() : "", "");
    }

    public ResultRow compared(String text) {
        String joined = compared.isEmpty() ? text : compared + "; " + text;
        return new ResultRow(section, measured, callers, opsPerSecond, p50Millis, p99Millis, client, joined, target);
    }

    public ResultRow target(String verdict) {
        return new ResultRow(section, measured, callers, opsPerSecond, p50Millis, p99Millis, client, compared, verdict);
    }
}

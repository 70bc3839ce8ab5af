package dev.idempotency.benchmarks;

/**
 * One line of the table: what was measured at how many callers, its rate, latency percentiles, the
 * client's CPU, user-mode CPU and context switches per operation (null where a figure does not apply),
 * how it compares, and whether its target is met.
 */
record ResultRow(String section, String measured, int callers, Double opsPerSecond, Double p50Millis,
                 Double p99Millis, Double clientCpuMicros, Double clientUserMicros, Double clientSwitches,
                 String compared, String target) {

    /** A row for a measurement, with nothing compared yet. */
    static ResultRow of(String section, String measured, int callers, Measurement m) {
        return new ResultRow(section, measured, callers, m.opsPerSecond(), m.p50Millis(), m.p99Millis(),
                measured(m.clientCpuMicrosPerOp()), measured(m.clientUserMicrosPerOp()),
                measured(m.clientSwitchesPerOp()),
                m.errors() > 0 ? "ERRORS: " + m.errors() : "", "");
    }

    private static Double measured(double figure) {
        return Double.isNaN(figure) ? null : figure;
    }

    ResultRow compared(String text) {
        String joined = compared.isEmpty() ? text : compared + "; " + text;
        return new ResultRow(section, measured, callers, opsPerSecond, p50Millis, p99Millis, clientCpuMicros,
                clientUserMicros, clientSwitches, joined, target);
    }

    ResultRow target(String verdict) {
        return new ResultRow(section, measured, callers, opsPerSecond, p50Millis, p99Millis, clientCpuMicros,
                clientUserMicros, clientSwitches, compared, verdict);
    }
}

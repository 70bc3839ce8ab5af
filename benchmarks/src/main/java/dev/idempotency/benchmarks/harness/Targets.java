package dev.idempotency.benchmarks.harness;

import java.util.Locale;

/**
 * The targets, each rendered as "met" or "NOT MET" with its threshold, for the table's last column,
 * and the ratios a row compares the executor by.
 */
public final class Targets {
    private Targets() {
    }

    /** A ratio that must reach {@code floor}, e.g. ours/pgbench throughput at least 0.90. */
    public static String atLeast(String what, double value, double floor) {
        return verdict(value >= floor, String.format(Locale.ROOT, "%s >= %.2f", what, floor));
    }

    /** A time that must stay below {@code ceilingMillis}. */
    public static String below(String what, double millis, double ceilingMillis) {
        return verdict(millis < ceilingMillis, String.format(Locale.ROOT, "%s < %s ms", what, trim(ceilingMillis)));
    }

    public static String verdict(boolean met, String target) {
        return (met ? "met: " : "NOT MET: ") + target;
    }

    /** ours / theirs, or NaN when theirs is zero (a failed cell). */
    public static double ratio(double ours, double theirs) {
        return theirs == 0 ? Double.NaN : ours / theirs;
    }

    /** "ours/this: ops, p50, p99", the executor's figures over the row's, for the table's comparison column. */
    public static String oursOverThis(Measurement ours, Measurement theirs) {
        return "ours/this: ops " + format(ratio(ours.opsPerSecond(), theirs.opsPerSecond()))
                + ", p50 " + format(ratio(ours.p50Millis(), theirs.p50Millis()))
                + ", p99 " + format(ratio(ours.p99Millis(), theirs.p99Millis()));
    }

    public static String format(double value) {
        return Double.isNaN(value) ? "n/a" : String.format(Locale.ROOT, "%.2f", value);
    }

    private static String trim(double value) {
        return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
    }
}

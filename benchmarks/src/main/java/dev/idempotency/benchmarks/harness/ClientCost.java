package dev.idempotency.benchmarks.harness;

/**
 * What the client process spent per operation over a measurement: CPU time, the user-mode part of it
 * (its own code and libraries', the rest being the kernel's) and its threads' context switches
 * ({@link ClientProcess}). A figure is NaN where it was not measured; {@link #NONE} where none was.
 */
public record ClientCost(double cpuMicros, double userMicros, double switches) {
    /** No client measured: relay, sweeper and storm rows, and failed cells. */
    public static final ClientCost NONE = new ClientCost(Double.NaN, Double.NaN, Double.NaN);
}

package dev.idempotency.benchmarks.harness;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.HdrHistogram.Histogram;

/**
 * What one cell of the table measured: operations completed in the measured window, their rate, the
 * 50th and 99th latency percentiles, what the client process spent per operation ({@link ClientCost}),
 * and how many operations failed (with the first failure's text).
 */
public record Measurement(long operations, double opsPerSecond, double p50Millis, double p99Millis, ClientCost client,
                   long errors, String firstError) {

    private static final double NANOS_PER_MILLI = 1_000_000.0;

    /** A histogram that takes latencies in nanoseconds from 1 µs to one minute, at 3 significant digits. */
    public static Histogram newLatencyHistogram() {
        return new Histogram(1_000L, 60_000_000_000L, 3);
    }

    /** Reads rate and percentiles from a histogram of nanosecond latencies. */
    public static Measurement of(Histogram latenciesNanos, double elapsedSeconds, long errors, String firstError) {
        long operations = latenciesNanos.getTotalCount();
        double rate = elapsedSeconds > 0 ? operations / elapsedSeconds : 0;
        return new Measurement(operations, rate,
                latenciesNanos.getValueAtPercentile(50) / NANOS_PER_MILLI,
                latenciesNanos.getValueAtPercentile(99) / NANOS_PER_MILLI,
                ClientCost.NONE, errors, firstError);
    }

    /** This measurement with what the client spent per operation. */
    Measurement withClient(ClientCost cost) {
        return new Measurement(operations, opsPerSecond, p50Millis, p99Millis, cost, errors, firstError);
    }

    /** This measurement with {@code errors} failed operations, the first failure's text {@code firstError}. */
    public Measurement withErrors(long errors, String firstError) {
        return new Measurement(operations, opsPerSecond, p50Millis, p99Millis, client, errors, firstError);
    }

    /** Each figure's median over repetitions of the same cell; errors are summed, not averaged away. */
    static Measurement median(List<Measurement> runs) {
        if (runs.size() == 1) {
            return runs.get(0);
        }
        long errors = runs.stream().mapToLong(Measurement::errors).sum();
        String firstError = runs.stream().map(Measurement::firstError).filter(e -> e != null).findFirst().orElse(null);
        return new Measurement(Math.round(median(runs, m -> m.operations)), median(runs, Measurement::opsPerSecond),
                median(runs, Measurement::p50Millis), median(runs, Measurement::p99Millis),
                new ClientCost(median(runs, m -> m.client.cpuMicros()), median(runs, m -> m.client.userMicros()),
                        median(runs, m -> m.client.switches())), errors, firstError);
    }

    private static double median(List<Measurement> runs, ToDoubleFunction<Measurement> figure) {
        List<Double> values = new ArrayList<>();
        runs.forEach(m -> values.add(figure.applyAsDouble(m)));
        return medianOf(values);
    }

    /** The median of {@code values}; NaN when there are none. */
    public static double medianOf(List<Double> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Comparator.naturalOrder());
        int middle = sorted.size() / 2;
        return sorted.size() % 2 == 1 ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
    }
}

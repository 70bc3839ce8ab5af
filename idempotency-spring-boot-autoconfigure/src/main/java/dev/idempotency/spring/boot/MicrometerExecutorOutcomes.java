package dev.idempotency.spring.boot;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Map;

/**
 * Counts executor calls on the application's registry as {@code idempotency.executor.calls}, tagged
 * {@code outcome} (first_run, replay, in_progress, key_reused, business_failure, transient_failure,
 * error) and {@code replayed} (true when the stored outcome was returned, a replayed business failure
 * included). No tenant or key tags: their number is unbounded.
 */
final class MicrometerExecutorOutcomes implements ExecutorOutcomeListener {
    static final String METER = "idempotency.executor.calls";

    private final Map<ExecutorOutcome, Counter> first = new EnumMap<>(ExecutorOutcome.class);
    private final Map<ExecutorOutcome, Counter> replayed = new EnumMap<>(ExecutorOutcome.class);

    MicrometerExecutorOutcomes(MeterRegistry registry) {
        for (ExecutorOutcome outcome : ExecutorOutcome.values()) {
            first.put(outcome, counter(registry, outcome, outcome == ExecutorOutcome.REPLAY));
        }
        // The one failure a replay can end in; the other outcomes have a single series each.
        replayed.put(ExecutorOutcome.BUSINESS_FAILURE, counter(registry, ExecutorOutcome.BUSINESS_FAILURE, true));
    }

    private static Counter counter(MeterRegistry registry, ExecutorOutcome outcome, boolean replayed) {
        return Counter.builder(METER).tag("outcome", outcome.tag()).tag("replayed", Boolean.toString(replayed))
                .description("Idempotent executor calls by how they ended").register(registry);
    }

    @Override
    public void ended(ExecutorOutcome outcome, boolean wasReplayed) {
        Counter counter = wasReplayed ? replayed.get(outcome) : null;
        (counter != null ? counter : first.get(outcome)).increment();
    }
}

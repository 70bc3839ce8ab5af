package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A publisher that sends nothing and reports every event PUBLISHED, telling an observer about each
 * one first: the relay's cost without a broker's.
 */
final class NoOpPublisher implements Publisher {
    private final Consumer<OutboxEvent> observer;

    /** Reports {@code observer} each event, on the relay's publish thread; the observer must be quick. */
    NoOpPublisher(Consumer<OutboxEvent> observer) {
        this.observer = Objects.requireNonNull(observer, "observer");
    }

    /** One that observes nothing. */
    NoOpPublisher() {
        this(event -> { });
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        List<PublishResult> results = new ArrayList<>(events.size());
        for (OutboxEvent event : events) {
            observer.accept(event);
            results.add(PublishResult.published());
        }
        return results;
    }

    @Override
    public void close() {
    }
}

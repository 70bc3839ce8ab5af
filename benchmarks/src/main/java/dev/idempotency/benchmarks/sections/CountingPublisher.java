package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the events a publisher reported PUBLISHED (shared by several relays), so a drain can tell
 * cheaply when the whole backlog reached the broker without counting rows in the database.
 */
final class CountingPublisher implements Publisher {
    private final Publisher delegate;
    private final AtomicLong published;

    CountingPublisher(Publisher delegate, AtomicLong published) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.published = Objects.requireNonNull(published, "published");
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        List<PublishResult> results = delegate.publish(events);
        long count = results.stream().filter(r -> r.status() == PublishResult.Status.PUBLISHED).count();
        published.addAndGet(count);
        return results;
    }

    @Override
    public void close() {
        delegate.close();
    }
}

package dev.idempotency.faults;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.util.List;

/** An in-JVM broker that acknowledges every event and records it in a {@link PublishedEvents}. */
final class RecordingSink implements Publisher {
    private final PublishedEvents published;

    RecordingSink(PublishedEvents published) {
        this.published = published;
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        for (OutboxEvent e : events) {
            published.record(e.messageId(), e.tenant(), e.topic(), e.partitionKey());
        }
        return events.stream().map(e -> PublishResult.published()).toList();
    }

    @Override
    public void close() {
    }
}

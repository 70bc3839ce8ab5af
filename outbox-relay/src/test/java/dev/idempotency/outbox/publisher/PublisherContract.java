package dev.idempotency.outbox.publisher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.core.outbox.Publisher;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every publisher promises the relay (see {@link Publisher}), run against the real broker or
 * endpoint of each: one result per event, in order; each message carries the event's message id and
 * its tenant, topic and partition key; a broker that cannot be reached makes every event
 * UNAVAILABLE (no attempt counted, the relay pauses); and one call's longest duration is declared.
 * A publisher's test class extends this and says how to reach its broker and read what arrived.
 */
@Timeout(120)
public abstract class PublisherContract {
    private static final AtomicLong ids = new AtomicLong(90_000);

    /** One message as it arrived, with its routing headers decoded. */
    public record Arrived(String messageId, String tenant, String topic, String partitionKey) {
    }

    /** The topic events are published to; what arrives on it is what {@link #arrived(int)} reads. */
    protected abstract String topic();

    /** A publisher that reaches the running broker or endpoint. */
    protected abstract Publisher reachablePublisher();

    /**
     * A publisher pointed at {@code closedPort} on 127.0.0.1, where nothing listens; null for a
     * publisher that has no broker to miss.
     */
    protected abstract Publisher unreachablePublisher(int closedPort);

    /** Waits for {@code count} messages on {@link #topic()} and returns them as they arrived. */
    protected abstract List<Arrived> arrived(int count) throws Exception;

    /** False for a publisher that does not bound its calls, so that the relay's publishTimeout does. */
    protected boolean boundsItsCalls() {
        return true;
    }

    @Test
    public void publishesEveryEventWithOneResultPerEventInOrderCarryingItsMessageIdAndRoutingHeaders() throws Exception {
        List<OutboxEvent> events = List.of(event("acme", "order-1"), event("acme", "order 2"), event("globex", "refund-1"));

        List<PublishResult> results;
        try (Publisher publisher = reachablePublisher()) {
            results = publisher.publish(events);
        }

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED),
                results.stream().map(PublishResult::status).toList(), results::toString);
        Map<String, Arrived> byMessageId = arrived(events.size()).stream()
                .collect(Collectors.toMap(Arrived::messageId, Function.identity()));
        for (OutboxEvent event : events) {
            assertEquals(new Arrived(event.messageId(), event.tenant(), event.topic(), event.partitionKey()),
                    byMessageId.get(event.messageId()), "what arrived for " + event.messageId() + " of " + byMessageId);
        }
    }

    @Test
    public void aBrokerThatCannotBeReachedMakesEveryEventUnavailableOneResultPerEvent() {
        int closedPort = FreePorts.closedPort();
        Publisher unreachable = unreachablePublisher(closedPort);
        assumeTrue(unreachable != null, "this publisher has no broker that could be missing");
        List<OutboxEvent> events = List.of(event("acme", "a"), event("acme", "b"), event("acme", "c"));

        List<PublishResult> results;
        try (Publisher publisher = unreachable) {
            results = publisher.publish(events);
        }

        assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE, Status.UNAVAILABLE),
                results.stream().map(PublishResult::status).toList(), results::toString);
    }

    @Test
    public void declaresHowLongOneCallCanTake() {
        Optional<Duration> bound;
        try (Publisher publisher = reachablePublisher()) {
            bound = publisher.maxCallDuration();
        }

        if (boundsItsCalls()) {
            assertTrue(bound.isPresent() && bound.get().compareTo(Duration.ZERO) > 0, "maxCallDuration " + bound);
        } else {
            assertEquals(Optional.empty(), bound, "a publisher that does not bound its calls must not claim a bound");
        }
    }

    private OutboxEvent event(String tenant, String partitionKey) {
        return new OutboxEvent(ids.incrementAndGet(), UUID.randomUUID().toString(), tenant, topic(), partitionKey,
                "{\"n\":1}", Map.of(), Instant.now(), 1);
    }
}

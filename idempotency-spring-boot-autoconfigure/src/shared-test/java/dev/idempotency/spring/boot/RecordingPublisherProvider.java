package dev.idempotency.spring.boot;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A publisher of the tests' own, registered in the shared test resources as a user's jar would
 * register one: keeps the settings it was made with and the topic of each event it is given.
 */
public final class RecordingPublisherProvider implements PublisherProvider {
    /** The name {@code idempotency.relay.publisher} chooses it by. */
    static final String NAME = "test-recording";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new Recording(Map.copyOf(settings));
    }

    /** Reports every event published and remembers its topic. */
    static final class Recording implements Publisher {
        final Map<String, String> settings;
        final List<String> topics = new CopyOnWriteArrayList<>();

        private Recording(Map<String, String> settings) {
            this.settings = settings;
        }

        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            events.forEach(event -> topics.add(event.topic()));
            return events.stream().map(event -> PublishResult.published()).toList();
        }

        @Override
        public void close() {
        }
    }
}

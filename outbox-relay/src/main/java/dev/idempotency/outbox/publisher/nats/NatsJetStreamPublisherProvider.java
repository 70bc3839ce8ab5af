package dev.idempotency.outbox.publisher.nats;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.Map;

/**
 * The publisher named {@code nats}: a {@link NatsJetStreamPublisher} configured by
 * {@link NatsJetStreamPublisherConfig.Builder#settings(Map)}. Found through {@link java.util.ServiceLoader} (by
 * {@link dev.idempotency.outbox.publisher.Publishers}); only {@link #create(Map)} loads the publisher's classes.
 */
public final class NatsJetStreamPublisherProvider implements PublisherProvider {
    /** Called by {@link java.util.ServiceLoader}. */
    public NatsJetStreamPublisherProvider() {
    }

    /** {@code nats}. */
    @Override
    public String name() {
        return "nats";
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder().settings(settings).build());
    }
}

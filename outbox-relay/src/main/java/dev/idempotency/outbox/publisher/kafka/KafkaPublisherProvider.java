package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.Map;

/**
 * The publisher named {@code kafka}: a {@link KafkaPublisher} configured by
 * {@link KafkaPublisherConfig.Builder#settings(Map)}. Found through {@link java.util.ServiceLoader} (by
 * {@link dev.idempotency.outbox.publisher.Publishers}); only {@link #create(Map)} loads the publisher's classes.
 */
public final class KafkaPublisherProvider implements PublisherProvider {
    /** Called by {@link java.util.ServiceLoader}. */
    public KafkaPublisherProvider() {
    }

    /** {@code kafka}. */
    @Override
    public String name() {
        return "kafka";
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new KafkaPublisher(KafkaPublisherConfig.builder().settings(settings).build());
    }
}

package dev.idempotency.outbox.publisher.rabbitmq;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.Map;

/**
 * The publisher named {@code rabbitmq}: a {@link RabbitMqPublisher} configured by
 * {@link RabbitMqPublisherConfig.Builder#settings(Map)}. Found through {@link java.util.ServiceLoader} (by
 * {@link dev.idempotency.outbox.publisher.Publishers}); only {@link #create(Map)} loads the publisher's classes.
 */
public final class RabbitMqPublisherProvider implements PublisherProvider {
    /** Called by {@link java.util.ServiceLoader}. */
    public RabbitMqPublisherProvider() {
    }

    /** {@code rabbitmq}. */
    @Override
    public String name() {
        return "rabbitmq";
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new RabbitMqPublisher(RabbitMqPublisherConfig.builder().settings(settings).build());
    }
}

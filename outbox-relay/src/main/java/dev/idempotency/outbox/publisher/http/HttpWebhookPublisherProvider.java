package dev.idempotency.outbox.publisher.http;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.Map;

/**
 * The publisher named {@code http}: a {@link HttpWebhookPublisher} configured by
 * {@link HttpWebhookPublisherConfig.Builder#settings(Map)}. Found through {@link java.util.ServiceLoader} (by
 * {@link dev.idempotency.outbox.publisher.Publishers}); only {@link #create(Map)} loads the publisher's classes.
 */
public final class HttpWebhookPublisherProvider implements PublisherProvider {
    /** Called by {@link java.util.ServiceLoader}. */
    public HttpWebhookPublisherProvider() {
    }

    /** {@code http}. */
    @Override
    public String name() {
        return "http";
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder().settings(settings).build());
    }
}

package dev.idempotency.outbox.publisher.log;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.Map;

/**
 * The publisher named {@code log}: a {@link LoggingPublisher} configured by
 * {@link LoggingPublisherConfig.Builder#settings(Map)}. Found through {@link java.util.ServiceLoader} (by
 * {@link dev.idempotency.outbox.publisher.Publishers}); only {@link #create(Map)} loads the publisher's classes.
 */
public final class LoggingPublisherProvider implements PublisherProvider {
    /** Called by {@link java.util.ServiceLoader}. */
    public LoggingPublisherProvider() {
    }

    /** {@code log}. */
    @Override
    public String name() {
        return "log";
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        return new LoggingPublisher(LoggingPublisherConfig.builder().settings(settings).build());
    }
}

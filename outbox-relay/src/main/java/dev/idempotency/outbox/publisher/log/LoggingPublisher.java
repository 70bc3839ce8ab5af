package dev.idempotency.outbox.publisher.log;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A publisher that writes each event to an SLF4J logger and reports it published: the default for a
 * first run, to watch the outbox flow without a broker. At INFO it logs the event id, message id,
 * tenant, topic, partition key, attempt and payload size (and the writer's {@code traceparent} when the
 * event has one), never the payload; at DEBUG a second line
 * gives the headers and the payload.
 */
public final class LoggingPublisher implements Publisher {
    private final LoggingPublisherConfig config;
    private final Logger logger;

    /** A publisher that writes to the logger {@code config} names. */
    public LoggingPublisher(LoggingPublisherConfig config) {
        this(LoggerFactory.getLogger(Objects.requireNonNull(config, "config").loggerName()));
    }

    LoggingPublisher(Logger logger) {
        this.logger = Objects.requireNonNull(logger, "logger");
        this.config = LoggingPublisherConfig.builder().loggerName(logger.getName()).build();
    }

    /** The settings this publisher was built with. */
    public LoggingPublisherConfig config() {
        return config;
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        List<PublishResult> results = new ArrayList<>(events.size());
        for (OutboxEvent event : events) {
            if (logger.isInfoEnabled() && event.traceparent() != null) {
                logger.info("outbox event {} messageId={} tenant={} topic={} partitionKey={} attempt={} payloadBytes={}"
                                + " traceparent={}", event.id(), event.messageId(), event.tenant(), event.topic(),
                        event.partitionKey(), event.attempt(), event.payloadJson().getBytes(StandardCharsets.UTF_8).length,
                        event.traceparent());
            } else if (logger.isInfoEnabled()) {
                logger.info("outbox event {} messageId={} tenant={} topic={} partitionKey={} attempt={} payloadBytes={}",
                        event.id(), event.messageId(), event.tenant(), event.topic(), event.partitionKey(), event.attempt(),
                        event.payloadJson().getBytes(StandardCharsets.UTF_8).length);
            }
            logger.debug("outbox event {} headers={} payload={}", event.id(), event.headers(), event.payloadJson());
            results.add(PublishResult.published());
        }
        return results;
    }

    /** {@code log}: not a broker, named for the relay's send spans. */
    @Override
    public String messagingSystem() {
        return "log";
    }

    /** Nothing to release. */
    @Override
    public void close() {
    }
}

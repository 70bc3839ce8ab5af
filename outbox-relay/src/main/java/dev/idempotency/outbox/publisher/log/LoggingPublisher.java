package dev.idempotency.outbox.publisher.log;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.PublisherSettings;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A publisher that writes each event to an SLF4J logger and reports it published: the default for a
 * first run, to watch the outbox flow without a broker. At INFO it logs the event id, message id,
 * tenant, topic, partition key, attempt and payload size, never the payload; at DEBUG a second line
 * gives the headers and the payload.
 */
public final class LoggingPublisher implements Publisher {
    /** The logger events go to unless another is named. */
    public static final String DEFAULT_LOGGER = "dev.idempotency.outbox.events";
    /** Setting: the name of the SLF4J logger to write to. */
    public static final String LOGGER_SETTING = "logger";

    private final Logger logger;

    /** Logs to {@value #DEFAULT_LOGGER}. */
    public LoggingPublisher() {
        this(DEFAULT_LOGGER);
    }

    /** Logs to the SLF4J logger called {@code loggerName}. */
    public LoggingPublisher(String loggerName) {
        this(LoggerFactory.getLogger(requireName(loggerName)));
    }

    LoggingPublisher(Logger logger) {
        this.logger = Objects.requireNonNull(logger, "logger");
    }

    /** Builds one from string settings: {@value #LOGGER_SETTING} (optional). */
    public static LoggingPublisher fromSettings(Map<String, String> values) {
        PublisherSettings settings = PublisherSettings.of("log", values);
        settings.allowOnly(List.of(LOGGER_SETTING));
        return new LoggingPublisher(settings.string(LOGGER_SETTING).orElse(DEFAULT_LOGGER));
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        List<PublishResult> results = new ArrayList<>(events.size());
        for (OutboxEvent event : events) {
            if (logger.isInfoEnabled()) {
                logger.info("outbox event {} messageId={} tenant={} topic={} partitionKey={} attempt={} payloadBytes={}",
                        event.id(), event.messageId(), event.tenant(), event.topic(), event.partitionKey(), event.attempt(),
                        event.payloadJson().getBytes(StandardCharsets.UTF_8).length);
            }
            logger.debug("outbox event {} headers={} payload={}", event.id(), event.headers(), event.payloadJson());
            results.add(PublishResult.published());
        }
        return results;
    }

    /** Nothing to release. */
    @Override
    public void close() {
    }

    private static String requireName(String loggerName) {
        if (loggerName == null || loggerName.isBlank()) {
            throw new IllegalArgumentException("loggerName must not be blank");
        }
        return loggerName;
    }
}

package dev.idempotency.outbox.publisher.log;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import java.util.List;
import java.util.Map;

/**
 * Which SLF4J logger a {@link LoggingPublisher} writes to. Immutable; made by {@link #builder()}, whose
 * {@code build()} validates it once.
 */
public final class LoggingPublisherConfig {
    /** The logger events go to unless another is named. */
    public static final String DEFAULT_LOGGER = "dev.idempotency.outbox.events";
    /** Setting: the name of the SLF4J logger to write to, {@value #DEFAULT_LOGGER} by default. */
    public static final String LOGGER = "logger";

    private final String loggerName;

    private LoggingPublisherConfig(String loggerName) {
        this.loggerName = loggerName;
    }

    /** A builder that names {@value #DEFAULT_LOGGER} unless told otherwise. */
    public static Builder builder() {
        return new Builder();
    }

    /** The name of the SLF4J logger events are written to. */
    public String loggerName() {
        return loggerName;
    }

    @Override
    public String toString() {
        return "LoggingPublisherConfig{loggerName=" + loggerName + "}";
    }

    /** Collects the settings of a {@link LoggingPublisherConfig}; {@link #build()} validates them. */
    public static final class Builder {
        private String loggerName = DEFAULT_LOGGER;

        private Builder() {
        }

        /** The SLF4J logger to write to; default {@value LoggingPublisherConfig#DEFAULT_LOGGER}. */
        public Builder loggerName(String loggerName) {
            this.loggerName = loggerName;
            return this;
        }

        /** Reads the string setting {@value LoggingPublisherConfig#LOGGER} onto this builder; refuses any other. */
        public Builder settings(Map<String, String> values) {
            PublisherSettings settings = PublisherSettings.of("log", values);
            settings.allowOnly(List.of(LOGGER));
            settings.string(LOGGER).ifPresent(this::loggerName);
            return this;
        }

        /** Validates the settings; an {@link IllegalArgumentException} names a bad one. */
        public LoggingPublisherConfig build() {
            return new LoggingPublisherConfig(SettingChecks.requireText("loggerName", loggerName));
        }
    }
}

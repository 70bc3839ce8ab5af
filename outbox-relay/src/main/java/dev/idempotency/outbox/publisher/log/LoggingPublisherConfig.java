package dev.idempotency.outbox.publisher.log;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import java.util.List;
import java.util.Map;

/** Which SLF4J logger a {@link LoggingPublisher} writes to. Immutable; made by {@link LoggingPublisher#builder()}. */
public final class LoggingPublisherConfig {
    /** The logger events go to unless another is named. */
    public static final String DEFAULT_LOGGER = "dev.idempotency.outbox.events";
    /** Setting: the name of the SLF4J logger to write to, {@value #DEFAULT_LOGGER} by default. */
    public static final String LOGGER = "logger";

    private final String loggerName;

    private LoggingPublisherConfig(String loggerName) {
        this.loggerName = loggerName;
    }

    static Builder builder() {
        return new Builder();
    }

    static LoggingPublisherConfig fromSettings(Map<String, String> values) {
        return read(values, builder()).build();
    }

    /** Applies the string setting {@value #LOGGER} to {@code builder}; refuses any other. */
    static Builder read(Map<String, String> values, Builder builder) {
        PublisherSettings settings = PublisherSettings.of("log", values);
        settings.allowOnly(List.of(LOGGER));
        settings.string(LOGGER).ifPresent(builder::loggerName);
        return builder;
    }

    /** The name of the SLF4J logger events are written to. */
    public String loggerName() {
        return loggerName;
    }

    @Override
    public String toString() {
        return "LoggingPublisherConfig{loggerName=" + loggerName + "}";
    }

    static final class Builder {
        private String loggerName = DEFAULT_LOGGER;

        private Builder() {
        }

        /** The SLF4J logger to write to; default {@value LoggingPublisherConfig#DEFAULT_LOGGER}. */
        public Builder loggerName(String loggerName) {
            this.loggerName = loggerName;
            return this;
        }

        LoggingPublisherConfig build() {
            return new LoggingPublisherConfig(SettingChecks.requireText("loggerName", loggerName));
        }
    }
}

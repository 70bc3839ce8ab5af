package dev.idempotency.outbox.cli;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Reads flag values such as {@code 500ms}, {@code 30s}, {@code 5m}, {@code 24h} or {@code PT30S}. */
final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        try {
            return PublisherSettings.parseDuration(value.strip());
        } catch (IllegalArgumentException e) {
            throw new TypeConversionException("'" + value + "' is not a duration; write e.g. 500ms, 30s, 5m, 24h or PT30S");
        }
    }
}

package dev.idempotency.outbox.publisher.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The string settings of one publisher (from flags, environment variables or a properties file),
 * read through typed getters whose errors name the setting. A blank value counts as absent, so an
 * empty environment variable falls back to the default. Not API: public only so that the publishers'
 * own packages and the command line can share it.
 */
public final class PublisherSettings {
    private static final Pattern SHORT_DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");

    private final String publisher;
    private final Map<String, String> values;

    private PublisherSettings(String publisher, Map<String, String> values) {
        this.publisher = publisher;
        this.values = values;
    }

    /** Wraps {@code values}, the settings of the publisher called {@code publisher} (used in error messages). */
    public static PublisherSettings of(String publisher, Map<String, String> values) {
        Objects.requireNonNull(publisher, "publisher");
        Objects.requireNonNull(values, "settings");
        Map<String, String> present = new LinkedHashMap<>();
        values.forEach((name, value) -> {
            if (value != null && !value.isBlank()) {
                present.put(name, value.strip());
            }
        });
        return new PublisherSettings(publisher, Map.copyOf(present));
    }

    /**
     * Refuses any setting not in {@code names} nor starting with one of {@code prefixes}, so that a
     * typo fails at start-up instead of being silently ignored.
     */
    public void allowOnly(Collection<String> names, String... prefixes) {
        for (String name : values.keySet()) {
            if (names.contains(name) || List.of(prefixes).stream().anyMatch(name::startsWith)) {
                continue;
            }
            TreeSet<String> known = new TreeSet<>(names);
            for (String prefix : prefixes) {
                known.add(prefix + "<name>");
            }
            throw new IllegalArgumentException("unknown " + publisher + " publisher setting '" + name
                    + "'; known settings: " + String.join(", ", known));
        }
    }

    /** The value of {@code name}, if set. */
    public Optional<String> string(String name) {
        return Optional.ofNullable(values.get(name));
    }

    /** The value of {@code name}; an {@link IllegalArgumentException} naming it when absent. */
    public String required(String name) {
        return string(name).orElseThrow(() -> new IllegalArgumentException(
                publisher + " publisher setting '" + name + "' is required"));
    }

    /** A whole number. */
    public Optional<Integer> integer(String name) {
        return string(name).map(value -> {
            try {
                return Integer.valueOf(value);
            } catch (NumberFormatException e) {
                throw invalid(name, value, "a whole number");
            }
        });
    }

    /** {@code true} or {@code false}, in any case. */
    public Optional<Boolean> bool(String name) {
        return string(name).map(value -> switch (value.toLowerCase(Locale.ROOT)) {
            case "true" -> Boolean.TRUE;
            case "false" -> Boolean.FALSE;
            default -> throw invalid(name, value, "true or false");
        });
    }

    /** A duration written as {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT10S}). */
    public Optional<Duration> duration(String name) {
        return string(name).map(value -> {
            try {
                return parseDuration(value);
            } catch (IllegalArgumentException e) {
                throw invalid(name, value, "a duration such as 500ms, 10s, 2m or PT10S");
            }
        });
    }

    /**
     * Reads a duration written as {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h} or ISO-8601
     * ({@code PT10S}); throws {@link IllegalArgumentException} for anything else.
     */
    public static Duration parseDuration(String value) {
        Matcher matcher = SHORT_DURATION.matcher(value);
        try {
            if (matcher.matches()) {
                long amount = Long.parseLong(matcher.group(1));
                return switch (matcher.group(2)) {
                    case "ms" -> Duration.ofMillis(amount);
                    case "s" -> Duration.ofSeconds(amount);
                    case "m" -> Duration.ofMinutes(amount);
                    default -> Duration.ofHours(amount);
                };
            }
            return Duration.parse(value);
        } catch (NumberFormatException | ArithmeticException | DateTimeParseException e) {
            throw new IllegalArgumentException("not a duration: " + value, e);
        }
    }

    /** Every setting whose name starts with {@code prefix}, keyed by the rest of its name, in no particular order. */
    public Map<String, String> withPrefix(String prefix) {
        Map<String, String> matching = new LinkedHashMap<>();
        values.forEach((name, value) -> {
            if (name.startsWith(prefix) && name.length() > prefix.length()) {
                matching.put(name.substring(prefix.length()), value);
            }
        });
        return matching;
    }

    private IllegalArgumentException invalid(String name, String value, String expected) {
        return new IllegalArgumentException(publisher + " publisher setting '" + name + "' must be "
                + expected + " (was '" + value + "')");
    }
}

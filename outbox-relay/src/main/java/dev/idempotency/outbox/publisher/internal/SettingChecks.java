package dev.idempotency.outbox.publisher.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * The checks every publisher configuration runs when it is built, with one message style:
 * {@code "<setting> must be ... (was <value>)"}. Not API: public only so that the publishers'
 * own packages can share it.
 */
public final class SettingChecks {
    private SettingChecks() {
    }

    /** {@code value} unless null or blank. */
    public static String requireText(String setting, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(setting + " must not be blank");
        }
        return value;
    }

    /** {@code value} unless null; for secrets, whose value is never quoted. */
    public static <T> T requirePresent(String setting, T value) {
        if (value == null) {
            throw new IllegalArgumentException(setting + " must not be null");
        }
        return value;
    }

    /** {@code value} if it lies in {@code [min, max]}. */
    public static int requireBetween(String setting, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(setting + " must be between " + min + " and " + max + " (was " + value + ")");
        }
        return value;
    }

    /** {@code port} if it is a TCP port number. */
    public static int requirePort(String setting, int port) {
        return requireBetween(setting, port, 1, 65535);
    }

    /** {@code value} if it is longer than zero. */
    public static Duration requirePositive(String setting, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(setting + " must be a positive duration (was " + value + ")");
        }
        return value;
    }

    /** {@code value} if it lies in {@code [min, max]}. */
    public static Duration requireBetween(String setting, Duration value, Duration min, Duration max) {
        Objects.requireNonNull(min, "min");
        if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new IllegalArgumentException(setting + " must be between " + min.toMillis() + "ms and "
                    + max.toMillis() + "ms (was " + value + ")");
        }
        return value;
    }

    /** {@code value} if it is at least 1 ms and fits an int of milliseconds, as client libraries need. */
    public static Duration requireMillis(String setting, Duration value) {
        return requireBetween(setting, value, Duration.ofMillis(1), Duration.ofMillis(Integer.MAX_VALUE));
    }

    /**
     * {@code value} if it is a {@code host:port} pair (a bracketed IPv6 address allowed), the port a
     * TCP port number.
     */
    public static String requireHostPort(String setting, String value) {
        String text = requireText(setting, value).strip();
        int colon = text.lastIndexOf(':');
        boolean valid = colon > 0 && colon < text.length() - 1;
        if (valid) {
            try {
                int port = Integer.parseInt(text.substring(colon + 1));
                valid = port >= 1 && port <= 65535 && !text.substring(0, colon).isBlank();
            } catch (NumberFormatException e) {
                valid = false;
            }
        }
        if (!valid) {
            throw new IllegalArgumentException(setting + " must be host:port (was '" + value + "')");
        }
        return text;
    }
}

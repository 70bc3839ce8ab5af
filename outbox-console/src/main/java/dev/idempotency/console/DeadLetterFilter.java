package dev.idempotency.console;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Which dead letters the list shows and "requeue all matching" takes: an exact topic and tenant,
 * text anywhere in the last error, and a minimum age, each optional. Read from a request's fields and
 * written back into links and forms, so the confirmation acts on what the operator saw.
 */
record DeadLetterFilter(String topic, String tenant, String error, String age) {
    /** The minimum ages the filter offers, in the select's order. */
    enum Age {
        FIVE_MINUTES("5m", "5 minutes", Duration.ofMinutes(5)), ONE_HOUR("1h", "1 hour", Duration.ofHours(1)),
        ONE_DAY("1d", "1 day", Duration.ofDays(1)), SEVEN_DAYS("7d", "7 days", Duration.ofDays(7));

        /** The form field's value. */
        final String field;
        final String label;
        final Duration duration;

        Age(String field, String label, Duration duration) {
            this.field = field;
            this.label = label;
            this.duration = duration;
        }

        /** The age a form's field names, or null. */
        static Age of(String field) {
            for (Age age : values()) {
                if (age.field.equals(field)) {
                    return age;
                }
            }
            return null;
        }
    }

    /** No condition: every dead letter. */
    static final DeadLetterFilter NONE = new DeadLetterFilter(null, null, null, null);

    /** The filter a request's fields name; blank fields and unknown ages are left out. */
    static DeadLetterFilter from(Function<String, String> field) {
        String age = field.apply("age");
        return new DeadLetterFilter(blankToNull(field.apply("topic")), blankToNull(field.apply("tenant")),
                blankToNull(field.apply("error")), Age.of(age) == null ? null : age);
    }

    /** The minimum age in seconds, or null when the filter sets none. */
    Double olderThanSeconds() {
        return age == null ? null : (double) Age.of(age).duration.toSeconds();
    }

    boolean isEmpty() {
        return topic == null && tenant == null && error == null && age == null;
    }

    /** The filter as a URL query ({@code topic=...&age=1h}), empty when it sets nothing. */
    String query() {
        StringBuilder query = new StringBuilder();
        fields().forEach((name, value) -> query.append(query.length() == 0 ? "" : "&").append(name).append('=')
                .append(URLEncoder.encode(value, StandardCharsets.UTF_8)));
        return query.toString();
    }

    /** The fields that are set, by name, in the form's order. */
    Map<String, String> fields() {
        Map<String, String> fields = new LinkedHashMap<>();
        if (topic != null) {
            fields.put("topic", topic);
        }
        if (tenant != null) {
            fields.put("tenant", tenant);
        }
        if (error != null) {
            fields.put("error", error);
        }
        if (age != null) {
            fields.put("age", age);
        }
        return fields;
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.strip();
    }
}

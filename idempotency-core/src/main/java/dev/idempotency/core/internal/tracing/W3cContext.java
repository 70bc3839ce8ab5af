package dev.idempotency.core.internal.tracing;

import java.util.regex.Pattern;

/**
 * A W3C trace context as stored with an outbox event and sent in message headers: a well-formed
 * {@code traceparent} and, when there is one, a {@code tracestate}. Not API.
 *
 * @param traceparent the W3C {@code traceparent} value, e.g. {@code 00-<trace id>-<span id>-01}
 * @param tracestate the W3C {@code tracestate} value, or null
 */
public record W3cContext(String traceparent, String tracestate) {
    /** The header (and column) names, as the W3C Trace Context recommendation spells them. */
    public static final String TRACEPARENT = "traceparent";
    public static final String TRACESTATE = "tracestate";

    /** Longest traceparent kept: version 00 is 55 characters, later versions may append fields. */
    public static final int MAX_TRACEPARENT_LENGTH = 256;
    /** Longest tracestate kept: 32 members of at most 256 + 256 characters fit. */
    public static final int MAX_TRACESTATE_LENGTH = 16_448;

    // Version, trace id, parent id, flags; a version other than 00 may append fields (W3C: "future versions").
    private static final Pattern TRACEPARENT_FORM =
            Pattern.compile("(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(-[\\x21-\\x7e]*)?");

    public W3cContext {
        if (!validTraceparent(traceparent)) {
            throw new IllegalArgumentException("traceparent must be a W3C traceparent value (version-traceid-parentid-flags)");
        }
        if (tracestate != null && !validTracestate(tracestate)) {
            throw new IllegalArgumentException("tracestate must be printable ASCII of at most " + MAX_TRACESTATE_LENGTH
                    + " characters");
        }
    }

    /**
     * The context of a stored or received pair, or null when {@code traceparent} is absent or malformed; a
     * malformed {@code tracestate} is left out. Never throws: a bad context must never cost a message.
     */
    public static W3cContext lenient(String traceparent, String tracestate) {
        if (!validTraceparent(traceparent)) {
            return null;
        }
        return new W3cContext(traceparent, validTracestate(tracestate) ? tracestate : null);
    }

    /** Whether {@code value} is a traceparent this library stores and sends. */
    public static boolean validTraceparent(String value) {
        return value != null && value.length() <= MAX_TRACEPARENT_LENGTH && TRACEPARENT_FORM.matcher(value).matches()
                && (!value.startsWith("00") || value.length() == 55);
    }

    /** Whether {@code value} is a tracestate this library stores and sends: non-blank printable ASCII, bounded. */
    public static boolean validTracestate(String value) {
        return value != null && !value.isBlank() && value.length() <= MAX_TRACESTATE_LENGTH
                && value.chars().allMatch(c -> c >= 0x20 && c < 0x7F);
    }
}

package dev.idempotency.outbox.publisher;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * The header names every publisher uses for an event's routing fields, so that a consumer reads the
 * same names whichever broker carried the message; and the encoding that makes any value fit a
 * transport whose headers only carry printable ASCII (HTTP, NATS).
 */
public final class OutboxHeaders {
    /** The tenant that emitted the event. */
    public static final String TENANT = "Outbox-Tenant";
    /** The event's topic. */
    public static final String TOPIC = "Outbox-Topic";
    /** The event's partition key. */
    public static final String PARTITION_KEY = "Outbox-Partition-Key";

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private OutboxHeaders() {
    }

    /**
     * Percent-encodes the UTF-8 bytes of {@code value} that a printable-ASCII header cannot carry
     * (controls, space, non-ASCII) and the two characters that would make decoding ambiguous
     * ({@code %}, {@code +}); every other character stays as it is, so {@code order:42} is sent as
     * {@code order:42}. {@link #decodeAsciiValue(String)} (or {@link URLDecoder}) gives the value back.
     */
    public static String encodeAsciiValue(String value) {
        StringBuilder encoded = null;
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xFF;
            boolean keep = b > 0x20 && b < 0x7F && b != '%' && b != '+';
            if (keep && encoded == null) {
                continue;
            }
            if (encoded == null) {
                encoded = new StringBuilder(bytes.length + 16);
                encoded.append(new String(bytes, 0, i, StandardCharsets.US_ASCII));
            }
            if (keep) {
                encoded.append((char) b);
            } else {
                encoded.append('%').append(HEX[b >> 4]).append(HEX[b & 0x0F]);
            }
        }
        return encoded == null ? value : encoded.toString();
    }

    /** The inverse of {@link #encodeAsciiValue(String)}. */
    public static String decodeAsciiValue(String value) {
        return URLDecoder.decode(value, StandardCharsets.UTF_8);
    }
}

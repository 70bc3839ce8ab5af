package dev.idempotency.http;

import java.util.Objects;

/**
 * One response header field line: a name and its value, as an adapter writes it. Names compare
 * case-insensitively ({@link #named(String)}); the value is kept exactly.
 */
public record HttpHeader(String name, String value) {

    /** Checks that the name is a token and the value holds no line break or other control character but tab. */
    public HttpHeader {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        if (!HttpTokens.isToken(name)) {
            throw new IllegalArgumentException("header name must be an HTTP token (was '" + name + "')");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                throw new IllegalArgumentException("header " + name + " has a control character at index " + i
                        + "; a field value must not contain line breaks or control characters");
            }
        }
    }

    /** True when this header's name is {@code name}, ignoring case. */
    public boolean named(String name) {
        return this.name.equalsIgnoreCase(name);
    }
}

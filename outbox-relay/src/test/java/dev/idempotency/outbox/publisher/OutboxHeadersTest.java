package dev.idempotency.outbox.publisher;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class OutboxHeadersTest {
    @Test
    void headerValuesRoundTripThroughTheAsciiEncoding() {
        assertEquals("order:42/a.b", OutboxHeaders.encodeAsciiValue("order:42/a.b"));
        assertEquals("caf%C3%A9%20100%25%2B1", OutboxHeaders.encodeAsciiValue("café 100%+1"));
        for (String value : new String[] {"order:42", "café 100%+1", "line\nbreak", "Ω≈ç √∫", ""}) {
            assertEquals(value, OutboxHeaders.decodeAsciiValue(OutboxHeaders.encodeAsciiValue(value)));
        }
    }
}

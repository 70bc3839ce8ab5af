package dev.idempotency.core.tracing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.outbox.OutboxEvent;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tracing setting, and the W3C values an event keeps and publishers send. */
class TracingTest {
    private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    @Test
    void anOpenTelemetryInstanceIsTakenAndAnythingElseRefused() {
        OpenTelemetry noop = OpenTelemetry.noop();
        assertSame(noop, Tracing.openTelemetry(noop).openTelemetry().orElseThrow());
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> Tracing.openTelemetry("sdk"));
        assertTrue(refused.getMessage().contains("io.opentelemetry.api.OpenTelemetry"), refused.getMessage());
        assertFalse(Tracing.disabled().enabled());
        assertTrue(Tracing.auto().enabled());
        assertSame(Traces.none(), Traces.of(Tracing.disabled()));
        assertNull(Traces.of(Tracing.auto()).current(), "no span is current");
    }

    @Test
    void onlyWellFormedW3cValuesAreKept() {
        for (String valid : List.of(TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future")) {
            assertTrue(W3cContext.validTraceparent(valid), valid);
        }
        for (String invalid : List.of("", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TRACEPARENT + "-extra", TRACEPARENT + "\r\nX: 1")) {
            assertFalse(W3cContext.validTraceparent(invalid), invalid);
        }
        assertNull(W3cContext.lenient("garbage", "vendor=1"));
        assertEquals(new W3cContext(TRACEPARENT, null), W3cContext.lenient(TRACEPARENT, "bad\nstate"));
    }

    @Test
    void anEventSendsItsContextAsTheW3cHeadersAndRefusesAMalformedOne() {
        OutboxEvent traced = new OutboxEvent(1, "m-1", "t", "orders", "k", "{}", Map.of(), Instant.now(), 1,
                TRACEPARENT, "vendor=opaque");
        assertEquals(List.of("traceparent", "tracestate"), List.copyOf(traced.traceHeaders().keySet()));
        assertEquals(Map.of("traceparent", TRACEPARENT, "tracestate", "vendor=opaque"), traced.traceHeaders());
        assertEquals(Map.of(), new OutboxEvent(1, "m-1", "t", "orders", "k", "{}", Map.of(), Instant.now(), 1).traceHeaders());
        assertThrows(IllegalArgumentException.class, () -> new OutboxEvent(1, "m-1", "t", "orders", "k", "{}", Map.of(),
                Instant.now(), 1, "00-bad", null));
        assertThrows(IllegalArgumentException.class, () -> new OutboxEvent(1, "m-1", "t", "orders", "k", "{}", Map.of(),
                Instant.now(), 1, null, "vendor=opaque"));
    }
}

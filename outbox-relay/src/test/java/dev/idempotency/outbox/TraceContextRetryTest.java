package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.tracing.Tracing;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An event's trace context, written with it by any writer (here plain SQL, as another language's client
 * would), survives its retries and its time as a dead letter: the attempt that goes out carries the
 * writer's context, and that attempt's send span links to it. A malformed stored context is left out,
 * never held against the event.
 */
@Timeout(90)
class TraceContextRetryTest {
    private static final String WRITER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final RecordingPublisher publisher = new RecordingPublisher("a", new PublicationLog());
    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private HikariDataSource pool;
    private OutboxRelay relay;

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
        if (pool != null) {
            pool.close();
        }
    }

    @Test
    void aRetriedAndARequeuedEventStillCarryTheirWritersContextAndAMalformedOneIsLeftOut() {
        long retried = insert("retried", WRITER, "vendor=opaque");
        long requeued = insert("requeued", WRITER, null);
        long malformed = insert("malformed", "00-not-a-trace-context", "vendor=opaque");
        publisher.failing(e -> e.id() == retried && e.attempt() == 1).rejecting(e -> e.id() == requeued);
        pool = outbox.newPool(3);
        relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").partitions(1).build())
                .tracing(Tracing.openTelemetry(OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                        .addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build()))
                .build();
        relay.start();

        outbox.awaitStatus(List.of(retried, malformed), "published", Duration.ofSeconds(30));
        outbox.awaitStatus(List.of(requeued), "dead", Duration.ofSeconds(30));
        OutboxEvent retry = publisher.received(retried);
        assertEquals(2, retry.attempt());
        assertEquals(WRITER, retry.traceparent());
        assertEquals("vendor=opaque", retry.tracestate());
        assertNull(publisher.received(malformed).traceparent(), "a malformed context is not sent");
        assertNull(publisher.received(malformed).tracestate());

        publisher.rejecting(e -> false);
        assertTrue(OutboxDeadLetters.builder(outbox.dataSource()).schema(outbox.schema()).build().requeue(requeued));
        relay.wakeUp();
        outbox.awaitStatus(List.of(requeued), "published", Duration.ofSeconds(30));

        assertEquals(WRITER, publisher.received(requeued).traceparent());
        List<SpanData> sends = spans.getFinishedSpanItems();
        assertTrue(sends.size() >= 3, "a send span per call: " + sends);
        SpanData last = sends.get(sends.size() - 1);
        assertEquals("00f067aa0ba902b7", last.getLinks().get(0).getSpanContext().getSpanId(),
                "the requeued event's send span links to its writer's context");
    }

    private long insert(String partitionKey, String traceparent, String tracestate) {
        long id = outbox.insert("t", "orders", partitionKey, "{}");
        outbox.execute("UPDATE outbox_events SET traceparent = " + literal(traceparent) + ", tracestate = "
                + literal(tracestate) + " WHERE id = " + id);
        return id;
    }

    private static String literal(String value) {
        return value == null ? "NULL" : "'" + value + "'";
    }
}

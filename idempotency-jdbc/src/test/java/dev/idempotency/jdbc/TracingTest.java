package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.core.tracing.Tracing;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * With tracing on, an event published inside a span stores that span's W3C context with its row (with one
 * event and with several, tracestate included), the executor's run is a span with its outcome, and the
 * consumer's process span continues the trace the message carries; keys and tenants are never attributes.
 * With tracing disabled nothing is stored and no span made.
 */
@Timeout(60)
class TracingTest {
    private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .build();
    private final Tracer requests = sdk.getTracer("test");

    @BeforeEach
    void clear() {
        spans.reset();
    }

    @AfterAll
    static void noGlobalInstance() {
        assertFalse(io.opentelemetry.api.GlobalOpenTelemetry.isSet(), "the tests pass their SDK; none is global");
    }

    private PostgresIdempotentExecutor executor(Tracing tracing) {
        return PostgresIdempotentExecutor.builder(db.schema.dataSource())
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).tracing(tracing).build();
    }

    @Test
    void anEventPublishedInsideARequestsSpanStoresTheRunsContextAndTheRunIsASpanWithItsOutcome() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        String key = ExecutorFixture.newKey();

        SpanContext request = inSpan("POST /payments", () -> {
            executor.run(key, "t1", tx -> {
                tx.outbox().publish("payments", "p1", Map.of("cents", 100));
                return "ok";
            });
            return Span.current().getSpanContext();
        });

        SpanData run = only("IdempotentExecutor.run");
        assertEquals(request.getTraceId(), run.getTraceId());
        assertEquals(request.getSpanId(), run.getParentSpanId());
        assertEquals(SpanKind.INTERNAL, run.getKind());
        assertEquals("first_run", run.getAttributes().get(OUTCOME));
        Map<String, Object> row = db.jdbi.withHandle(h -> h.createQuery("SELECT traceparent, tracestate FROM "
                + db.schema.name() + ".outbox_events WHERE partition_key = 'p1' AND traceparent LIKE :trace")
                .bind("trace", "00-" + run.getTraceId() + "-%").mapToMap().one());
        assertEquals("00-" + run.getTraceId() + "-" + run.getSpanId() + "-" + run.getSpanContext().getTraceFlags().asHex(),
                row.get("traceparent"), "the event names the writer's trace, as created inside the run");
        assertNull(row.get("tracestate"));

        spans.reset();
        inSpan("POST /payments (retry)", () -> executor.run(key, "t1", tx -> "not again"));
        assertEquals("replay", only("IdempotentExecutor.run").getAttributes().get(OUTCOME));
        assertNoKeyOrTenantInAnyAttribute(key, "t1");
    }

    @Test
    void severalEventsEachKeepTheContextAndItsTracestate() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        SpanContext remote = SpanContext.createFromRemoteParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7",
                TraceFlags.getSampled(), TraceState.builder().put("vendor", "opaque").build());

        try (Scope ignored = Context.root().with(Span.wrap(remote)).makeCurrent()) {
            executor.run(ExecutorFixture.newKey(), "t1", tx -> {
                tx.outbox().publish("payments", "p1", Map.of("n", 1));
                tx.outbox().publish("payments", "p2", Map.of("n", 2));
                tx.outbox().publishJson("audit", "p1", "{\"n\":3}");
                return "ok";
            });
        }

        SpanData run = only("IdempotentExecutor.run");
        assertEquals(remote.getTraceId(), run.getTraceId());
        List<Map<String, Object>> rows = db.jdbi.withHandle(h -> h.createQuery("SELECT traceparent, tracestate FROM "
                + db.schema.name() + ".outbox_events WHERE traceparent LIKE :trace ORDER BY id")
                .bind("trace", "00-" + remote.getTraceId() + "-%").mapToMap().list());
        assertEquals(3, rows.size());
        for (Map<String, Object> row : rows) {
            assertEquals("00-" + remote.getTraceId() + "-" + run.getSpanId() + "-01", row.get("traceparent"));
            assertEquals("vendor=opaque", row.get("tracestate"));
        }
    }

    @Test
    void eachEventKeepsTheContextCurrentWhenItWasPublishedNoneIncluded() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        String[] nested = new String[1];

        inSpan("POST /orders", () -> executor.run(ExecutorFixture.newKey(), "t1", tx -> {
            tx.outbox().publish("orders", "mixed-1", Map.of("n", 1));
            try (Scope ignored = Context.root().makeCurrent()) {
                tx.outbox().publish("orders", "mixed-2", Map.of("n", 2));
            }
            Span step = requests.spanBuilder("reserve stock").startSpan();
            try (Scope ignored = step.makeCurrent()) {
                tx.outbox().publish("orders", "mixed-3", Map.of("n", 3));
                nested[0] = step.getSpanContext().getSpanId();
            } finally {
                step.end();
            }
            return "ok";
        }));

        SpanData run = only("IdempotentExecutor.run");
        List<String> stored = db.jdbi.withHandle(h -> h.createQuery("SELECT coalesce(traceparent, 'none') FROM "
                + db.schema.name() + ".outbox_events WHERE partition_key LIKE 'mixed-%' ORDER BY id").mapTo(String.class).list());
        String flags = "-" + run.getSpanContext().getTraceFlags().asHex();
        assertEquals(List.of("00-" + run.getTraceId() + "-" + run.getSpanId() + flags, "none",
                "00-" + run.getTraceId() + "-" + nested[0] + flags), stored);
    }

    @Test
    void eachOutcomeIsAnAttributeOfTheRunsSpan() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        String declined = ExecutorFixture.newKey();
        assertThrows(BusinessFailure.class, () -> executor.run(declined, "t1", tx -> {
            throw new BusinessFailure("card_declined", "declined");
        }));
        assertThrows(BusinessFailure.class, () -> executor.run(declined, "t1", tx -> "never"));
        String reused = ExecutorFixture.newKey();
        executor.run(reused, "t1", RequestFingerprint.ofString("a"), tx -> "a");
        assertThrows(KeyReusedException.class, () -> executor.run(reused, "t1",
                RequestFingerprint.ofString("b"), tx -> "b"));
        assertThrows(IllegalStateException.class, () -> executor.run(ExecutorFixture.newKey(), "t1", tx -> {
            throw new IllegalStateException("the callback failed");
        }));

        assertEquals(List.of("business_failure", "replay", "first_run", "key_reused", "error"),
                spans.getFinishedSpanItems().stream().map(s -> s.getAttributes().get(OUTCOME)).toList());
        SpanData failed = spans.getFinishedSpanItems().get(4);
        assertEquals(io.opentelemetry.api.trace.StatusCode.ERROR, failed.getStatus().getStatusCode());
        assertEquals(IllegalStateException.class.getName(), failed.getAttributes().get(AttributeKey.stringKey("error.type")));
        assertTrue(failed.getEvents().isEmpty(), "no exception event: its message may quote a key or a payload");
    }

    @Test
    void theConsumersProcessSpanContinuesTheTraceTheMessageCarriesWithItsOutcome() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(executor, "billing")
                .maxAttempts(1).tracing(Tracing.openTelemetry(sdk)).build();
        String writer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        Map<String, String> headers = Map.of("traceparent", writer, "tracestate", "vendor=opaque");

        assertEquals(Delivery.Outcome.APPLIED, consumer.consume("m-1", "t1", headers::get, tx -> { }).outcome());
        assertEquals(Delivery.Outcome.DUPLICATE, consumer.consume("m-1", "t1", headers::get, tx -> { }).outcome());
        assertEquals(Delivery.Outcome.DEAD_LETTER, consumer.consume("m-2", "t1", headers::get, tx -> {
            throw new IllegalStateException("poison");
        }).outcome());

        List<SpanData> processes = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("process")).toList();
        assertEquals(List.of("first_run", "replay", "dead_letter"),
                processes.stream().map(s -> s.getAttributes().get(OUTCOME)).toList());
        for (SpanData process : processes) {
            assertEquals(SpanKind.CONSUMER, process.getKind());
            assertEquals("4bf92f3577b34da6a3ce929d0e0e4736", process.getTraceId(), "joins the writer's trace");
            assertEquals("00f067aa0ba902b7", process.getParentSpanId());
            assertEquals("00f067aa0ba902b7", process.getLinks().get(0).getSpanContext().getSpanId());
            assertEquals("billing", process.getAttributes().get(AttributeKey.stringKey("messaging.consumer.group.name")));
        }
        SpanData firstRun = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("IdempotentExecutor.run"))
                .findFirst().orElseThrow();
        assertEquals(processes.get(0).getSpanId(), firstRun.getParentSpanId(), "the executor's run is inside the process span");
        assertNoKeyOrTenantInAnyAttribute("m-1", "t1");
    }

    @Test
    void theBatchConsumersProcessSpanLinksEachMessagesTraceAndCountsEachOutcome() {
        PostgresIdempotentExecutor executor = executor(Tracing.openTelemetry(sdk));
        IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(executor, "shipping").maxAttempts(1)
                .tracing(Tracing.openTelemetry(sdk)).build();
        Map<String, Map<String, String>> headers = Map.of(
                "m-b1", Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
                "m-b2", Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                "m-b3", Map.of());
        IdempotentBatchConsumer.Handler<String> handler = (tx, id) -> {
            tx.outbox().publish("shipments", "batch-" + id, Map.of("shipped", true));
            if (id.equals("m-b3")) {
                throw new IllegalStateException("poison");
            }
        };

        consumer.consume(List.of("m-b1", "m-b2", "m-b3"), id -> id, id -> "t1", (id, name) -> headers.get(id).get(name), handler);
        consumer.consume(List.of("m-b1", "m-b2"), id -> id, id -> "t1", (id, name) -> headers.get(id).get(name), handler);

        List<SpanData> processes = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("process")).toList();
        assertEquals(2, processes.size(), "one span per batch");
        SpanData first = processes.get(0);
        assertEquals(SpanKind.CONSUMER, first.getKind());
        assertFalse(first.getParentSpanContext().isValid(), "a batch continues no one message's trace");
        assertEquals(List.of("00f067aa0ba902b7", "b7ad6b7169203331"),
                first.getLinks().stream().map(link -> link.getSpanContext().getSpanId()).toList());
        assertEquals(3L, first.getAttributes().get(AttributeKey.longKey("messaging.batch.message_count")));
        assertEquals(2L, first.getAttributes().get(AttributeKey.longKey("idempotency.messages.first_run")));
        assertEquals(1L, first.getAttributes().get(AttributeKey.longKey("idempotency.messages.dead_letter")));
        assertNull(first.getAttributes().get(OUTCOME), "the messages had different outcomes");
        assertEquals(IllegalStateException.class.getName(), first.getAttributes().get(AttributeKey.stringKey("error.type")));
        SpanData second = processes.get(1);
        assertEquals("replay", second.getAttributes().get(OUTCOME));
        assertEquals(2L, second.getAttributes().get(AttributeKey.longKey("idempotency.messages.replay")));
        assertEquals("shipping", second.getAttributes().get(AttributeKey.stringKey("messaging.consumer.group.name")));
        assertNull(second.getAttributes().get(AttributeKey.stringKey("error.type")));
        String stored = db.jdbi.withHandle(h -> h.createQuery("SELECT traceparent FROM " + db.schema.name()
                + ".outbox_events WHERE partition_key = 'batch-m-b1'").mapTo(String.class).one());
        assertEquals("00-" + first.getTraceId() + "-" + first.getSpanId() + "-" + first.getSpanContext().getTraceFlags().asHex(),
                stored, "a handler's event carries the batch's span");
        assertNoKeyOrTenantInAnyAttribute("m-b1", "t1");
    }

    @Test
    void aMessageWithoutTraceOrWithAMalformedOneStartsItsOwnTrace() {
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(executor(Tracing.openTelemetry(sdk)),
                "billing").tracing(Tracing.openTelemetry(sdk)).build();

        consumer.consume("m-3", "t1", tx -> { });
        consumer.consume("m-4", "t1", Map.of("traceparent", "00-zz-not-a-context")::get, tx -> { });

        for (SpanData process : spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("process")).toList()) {
            assertFalse(process.getParentSpanContext().isValid());
            assertTrue(process.getLinks().isEmpty());
        }
    }

    @Test
    void withTracingDisabledNothingIsStoredAndNoSpanIsMade() {
        PostgresIdempotentExecutor executor = executor(Tracing.disabled());

        inSpan("POST /payments", () -> executor.run(ExecutorFixture.newKey(), "t1", tx -> {
            tx.outbox().publish("payments", "untraced", Map.of("cents", 100));
            return "ok";
        }));

        assertEquals(List.of("POST /payments"), spans.getFinishedSpanItems().stream().map(SpanData::getName).toList());
        assertEquals(List.of(true), db.jdbi.withHandle(h -> h.createQuery("SELECT traceparent IS NULL AND tracestate IS NULL"
                + " FROM " + db.schema.name() + ".outbox_events WHERE partition_key = 'untraced'").mapTo(Boolean.class).list()));
    }

    private <T> T inSpan(String name, Supplier<T> work) {
        Span span = requests.spanBuilder(name).setSpanKind(SpanKind.SERVER).startSpan();
        try (Scope ignored = span.makeCurrent()) {
            return work.get();
        } finally {
            span.end();
        }
    }

    private SpanData only(String name) {
        List<SpanData> named = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
        assertEquals(1, named.size(), name + " spans");
        return named.get(0);
    }

    private void assertNoKeyOrTenantInAnyAttribute(String key, String tenant) {
        for (SpanData span : spans.getFinishedSpanItems()) {
            span.getAttributes().forEach((attribute, value) -> {
                assertFalse(String.valueOf(value).contains(key), span.getName() + " " + attribute + " holds the key");
                assertNotNull(value);
                assertFalse(String.valueOf(value).equals(tenant), span.getName() + " " + attribute + " holds the tenant");
            });
        }
    }
}

package dev.idempotency.outbox.publisher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.MigratedSchema;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every publisher promises the relay (see {@link Publisher}), run against the real broker or
 * endpoint of each: one result per event, in order; each message carries the event's message id and
 * its tenant, topic and partition key; a broker that cannot be reached makes every event
 * UNAVAILABLE (no attempt counted, the relay pauses); and one call's longest duration is declared.
 * A publisher's test class extends this and says how to reach its broker and read what arrived.
 */
@Timeout(120)
public abstract class PublisherContract {
    private static final AtomicLong ids = new AtomicLong(90_000);

    /** The writer's context as the contract test stores it; its trace and span ids are W3C's example. */
    private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /**
     * One message as it arrived, with its routing headers decoded and its trace headers as they arrived
     * ({@link #trace(Function)}).
     */
    public record Arrived(String messageId, String tenant, String topic, String partitionKey, Map<String, String> trace) {
        /** A message that arrived without trace headers. */
        public Arrived(String messageId, String tenant, String topic, String partitionKey) {
            this(messageId, tenant, topic, partitionKey, Map.of());
        }
    }

    /**
     * The {@code traceparent} and {@code tracestate} headers of a message that arrived, read with
     * {@code header} (all values of a header joined with a comma, so that a duplicate shows), those present.
     */
    protected static Map<String, String> trace(Function<String, String> header) {
        Map<String, String> trace = new java.util.TreeMap<>();
        for (String name : List.of("traceparent", "tracestate")) {
            String value = header.apply(name);
            if (value != null) {
                trace.put(name, value);
            }
        }
        return trace;
    }

    /** False for a publisher that sends only the traceparent (the log publisher's line). */
    protected boolean sendsTracestate() {
        return true;
    }

    /** The topic events are published to; what arrives on it is what {@link #arrived(int)} reads. */
    protected abstract String topic();

    /** A publisher that reaches the running broker or endpoint. */
    protected abstract Publisher reachablePublisher();

    /**
     * A publisher pointed at {@code closedPort} on 127.0.0.1, where nothing listens; null for a
     * publisher that has no broker to miss.
     */
    protected abstract Publisher unreachablePublisher(int closedPort);

    /** Waits for {@code count} messages on {@link #topic()} and returns them as they arrived. */
    protected abstract List<Arrived> arrived(int count) throws Exception;

    /** False for a publisher that does not bound its calls, so that the relay's publishTimeout does. */
    protected boolean boundsItsCalls() {
        return true;
    }

    @Test
    public void publishesEveryEventWithOneResultPerEventInOrderCarryingItsMessageIdAndRoutingHeaders() throws Exception {
        List<OutboxEvent> events = List.of(event("acme", "order-1"), event("acme", "order 2"), event("globex", "refund-1"));

        List<PublishResult> results;
        try (Publisher publisher = reachablePublisher()) {
            results = publisher.publish(events);
        }

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED),
                results.stream().map(PublishResult::status).toList(), results::toString);
        Map<String, Arrived> byMessageId = arrived(events.size()).stream()
                .collect(Collectors.toMap(Arrived::messageId, Function.identity()));
        for (OutboxEvent event : events) {
            assertEquals(new Arrived(event.messageId(), event.tenant(), event.topic(), event.partitionKey()),
                    byMessageId.get(event.messageId()), "what arrived for " + event.messageId() + " of " + byMessageId);
        }
    }

    @Test
    public void sendsEachEventsStoredTraceContextUnchangedInTheBrokersOwnHeaders() throws Exception {
        OutboxEvent withState = traced(event("acme", "traced-1"), Map.of(), TRACEPARENT, "vendor=opaque,other=1");
        // The stored context replaces an event header of the same name.
        OutboxEvent withoutState = traced(event("acme", "traced-2"), Map.of("traceparent", "00-written-by-hand"),
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", null);
        OutboxEvent untraced = event("acme", "untraced");

        List<PublishResult> results;
        try (Publisher publisher = reachablePublisher()) {
            results = publisher.publish(List.of(withState, withoutState, untraced));
        }

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED),
                results.stream().map(PublishResult::status).toList(), results::toString);
        Map<String, Map<String, String>> traces = arrived(3).stream()
                .collect(Collectors.toMap(Arrived::messageId, Arrived::trace));
        assertEquals(sendsTracestate() ? Map.of("traceparent", TRACEPARENT, "tracestate", "vendor=opaque,other=1")
                : Map.of("traceparent", TRACEPARENT), traces.get(withState.messageId()));
        assertEquals(Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
                traces.get(withoutState.messageId()));
        assertEquals(Map.of(), traces.get(untraced.messageId()));
    }

    private static OutboxEvent traced(OutboxEvent event, Map<String, String> headers, String traceparent, String tracestate) {
        return new OutboxEvent(event.id(), event.messageId(), event.tenant(), event.topic(), event.partitionKey(),
                event.payloadJson(), headers, event.createdAt(), event.attempt(), traceparent, tracestate);
    }

    /**
     * One trace from a request to the consumer, through the outbox and this broker: a request handled inside
     * a span writes an event; the relay publishes it, its send span linked to the writer's context; the
     * message that arrives names the request's trace; and the consumer's process span, fed the message's
     * headers, joins that trace. Keys and tenants are in no attribute.
     */
    @Test
    public void aRequestsTraceReachesTheConsumerThroughTheOutboxTheRelayAndThisBroker() throws Exception {
        InMemorySpanExporter spans = InMemorySpanExporter.create();
        Tracing tracing = Tracing.openTelemetry(OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                .build());
        SpanContext request;
        try (MigratedSchema schema = MigratedSchema.builder(IdempotencyMigrations::migrate).prefix("traces").poolSize(4)
                .build().start();
             Publisher publisher = reachablePublisher()) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                    .config(IdempotencyConfig.builder().schema(schema.name()).build()).tracing(tracing).build();
            Span span = ((io.opentelemetry.api.OpenTelemetry) tracing.openTelemetry().orElseThrow()).getTracer("test")
                    .spanBuilder("POST /payments").setSpanKind(SpanKind.SERVER).startSpan();
            try (Scope ignored = span.makeCurrent()) {
                executor.run("payment-1", "acme", tx -> {
                    tx.outbox().publish(topic(), "order-1", Map.of("cents", 100));
                    return "ok";
                });
            } finally {
                span.end();
            }
            request = span.getSpanContext();
            Arrived message;
            try (OutboxRelay relay = OutboxRelay.builder(schema.dataSource(), publisher)
                    .config(OutboxRelayConfig.builder().schema(schema.name()).instanceId("traces").partitions(2)
                            .idlePollMin(Duration.ofMillis(10)).idlePollMax(Duration.ofMillis(100)).build())
                    .tracing(tracing).build()) {
                relay.start();
                // Polled: the log publisher's arrived() reads what is there without waiting (others consume what they read).
                AtomicReference<List<Arrived>> arrived = new AtomicReference<>();
                Await.until("the relay published the event", Duration.ofSeconds(20), () -> {
                    arrived.set(arrived(1));
                    return !arrived.get().isEmpty();
                });
                assertEquals(1, arrived.get().size(), "the relay published the event");
                message = arrived.get().get(0);
            }
            SpanData run = named(spans, "IdempotentExecutor.run");
            assertEquals("00-" + request.getTraceId() + "-" + run.getSpanId() + "-" + run.getSpanContext().getTraceFlags().asHex(),
                    message.trace().get("traceparent"), "the message names the request's trace, as written inside its run");

            SpanData send = spans.getFinishedSpanItems().stream().filter(s -> s.getKind() == SpanKind.PRODUCER).findFirst()
                    .orElseThrow(() -> new AssertionError("no send span in " + spans.getFinishedSpanItems()));
            assertEquals("send " + topic(), send.getName());
            assertEquals(publisher.messagingSystem(), send.getAttributes().get(AttributeKey.stringKey("messaging.system")));
            assertNotEquals("other", publisher.messagingSystem());
            assertEquals(topic(), send.getAttributes().get(AttributeKey.stringKey("messaging.destination.name")));
            assertEquals(message.messageId(), send.getAttributes().get(AttributeKey.stringKey("messaging.message.id")));
            assertEquals(List.of(request.getTraceId() + "/" + run.getSpanId()), send.getLinks().stream().map(LinkData::getSpanContext)
                    .map(c -> c.getTraceId() + "/" + c.getSpanId()).toList(), "the send span links to the event's creation context");

            Delivery delivery = IdempotentConsumer.builder(executor, "billing").tracing(tracing).build()
                    .consume(message.messageId(), message.tenant(), message.trace()::get, (PostgresTransaction tx) -> { });
            assertEquals(Delivery.Outcome.APPLIED, delivery.outcome());
        }
        SpanData process = named(spans, "process");
        assertEquals(SpanKind.CONSUMER, process.getKind());
        assertEquals(request.getTraceId(), process.getTraceId(), "the consumer's process span joins the request's trace");
        assertEquals("first_run", process.getAttributes().get(AttributeKey.stringKey("idempotency.outcome")));
        assertTrue(spans.getFinishedSpanItems().stream().noneMatch(s -> s.getAttributes().asMap().values().stream()
                        .anyMatch(v -> String.valueOf(v).contains("payment-1") || String.valueOf(v).equals("acme"))),
                "no key or tenant in any attribute");
    }

    private static SpanData named(InMemorySpanExporter spans, String name) {
        return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no span " + name + " in " + spans.getFinishedSpanItems()));
    }

    @Test
    public void aBrokerThatCannotBeReachedMakesEveryEventUnavailableOneResultPerEvent() {
        int closedPort = FreePorts.closedPort();
        Publisher unreachable = unreachablePublisher(closedPort);
        assumeTrue(unreachable != null, "this publisher has no broker that could be missing");
        List<OutboxEvent> events = List.of(event("acme", "a"), event("acme", "b"), event("acme", "c"));

        List<PublishResult> results;
        try (Publisher publisher = unreachable) {
            results = publisher.publish(events);
        }

        assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE, Status.UNAVAILABLE),
                results.stream().map(PublishResult::status).toList(), results::toString);
    }

    @Test
    public void declaresHowLongOneCallCanTake() {
        Optional<Duration> bound;
        try (Publisher publisher = reachablePublisher()) {
            bound = publisher.maxCallDuration();
        }

        if (boundsItsCalls()) {
            assertTrue(bound.isPresent() && bound.get().compareTo(Duration.ZERO) > 0, "maxCallDuration " + bound);
        } else {
            assertEquals(Optional.empty(), bound, "a publisher that does not bound its calls must not claim a bound");
        }
    }

    private OutboxEvent event(String tenant, String partitionKey) {
        return new OutboxEvent(ids.incrementAndGet(), UUID.randomUUID().toString(), tenant, topic(), partitionKey,
                "{\"n\":1}", Map.of(), Instant.now(), 1);
    }
}

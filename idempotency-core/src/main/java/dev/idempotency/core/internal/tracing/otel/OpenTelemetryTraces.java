package dev.idempotency.core.internal.tracing.otel;

import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.outbox.OutboxEvent;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@link Traces} on the OpenTelemetry API: the context stored with events is the current span's, in
 * W3C form whatever propagators the application configured (the outbox's columns and the headers the
 * relay sends are W3C's); spans go to the given instance, or to {@code GlobalOpenTelemetry} once one is
 * registered (asked with {@code getOrNoop()}, which never fixes the global instance to a no-op).
 * The only class of the library that imports OpenTelemetry. Not API.
 */
public final class OpenTelemetryTraces implements Traces {
    /** The instrumentation scope of every span the library makes. */
    static final String SCOPE = "dev.idempotency";

    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");
    static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
    static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");
    static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<Long> BATCH_COUNT = AttributeKey.longKey("messaging.batch.message_count");
    static final AttributeKey<String> CONSUMER_GROUP = AttributeKey.stringKey("messaging.consumer.group.name");
    /** Followed by an outcome: how many messages of a batch had it ({@code idempotency.messages.first_run}). */
    static final String MESSAGES_PREFIX = "idempotency.messages.";

    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final TextMapGetter<W3cContext> FROM_CONTEXT = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(W3cContext carrier) {
            return List.of(W3cContext.TRACEPARENT, W3cContext.TRACESTATE);
        }

        @Override
        public String get(W3cContext carrier, String key) {
            if (carrier == null) {
                return null;
            }
            return W3cContext.TRACEPARENT.equals(key) ? carrier.traceparent()
                    : W3cContext.TRACESTATE.equals(key) ? carrier.tracestate() : null;
        }
    };

    /**
     * The global instance without fixing it: {@code GlobalOpenTelemetry.getOrNoop()}, which recent APIs
     * have. Older ones (Spring Boot 3.5 manages 1.49) have only {@code get()}, which, asked before the
     * application registers its SDK, would fix the global instance to a no-op for good; with those,
     * {@link dev.idempotency.core.tracing.Tracing#auto()} makes no spans of its own (the current context is
     * still stored and sent), and {@code Tracing.openTelemetry(instance)} does.
     */
    private static final Supplier<OpenTelemetry> GLOBAL = globalWithoutFixingIt();

    /** The instance given, or null for the global one. */
    private final OpenTelemetry fixed;
    /** The tracer of the last instance seen, so that a tracer is looked up once per instance. */
    private volatile TracerOf last;

    private record TracerOf(OpenTelemetry openTelemetry, Tracer tracer) {
    }

    private OpenTelemetryTraces(OpenTelemetry fixed) {
        this.fixed = fixed;
    }

    /** For {@code openTelemetry} (an {@link OpenTelemetry}), or the global instance when null. */
    public static Traces create(Object openTelemetry) {
        return new OpenTelemetryTraces((OpenTelemetry) openTelemetry);
    }

    private static Supplier<OpenTelemetry> globalWithoutFixingIt() {
        try {
            GlobalOpenTelemetry.class.getMethod("getOrNoop");
        } catch (NoSuchMethodException olderApi) {
            return OpenTelemetry::noop;
        }
        // A lambda, not a method reference: the call is linked when first run, which an older API never does.
        return () -> GlobalOpenTelemetry.getOrNoop();
    }

    private Tracer tracer() {
        OpenTelemetry openTelemetry = fixed != null ? fixed : GLOBAL.get();
        TracerOf known = last;
        if (known == null || known.openTelemetry() != openTelemetry) {
            known = new TracerOf(openTelemetry, openTelemetry.getTracer(SCOPE));
            last = known;
        }
        return known.tracer();
    }

    @Override
    public W3cContext current() {
        Context context = Context.current();
        if (!Span.fromContext(context).getSpanContext().isValid()) {
            return null;
        }
        Map<String, String> headers = new HashMap<>(4);
        W3C.inject(context, headers, Map::put);
        return W3cContext.lenient(headers.get(W3cContext.TRACEPARENT), headers.get(W3cContext.TRACESTATE));
    }

    @Override
    public TracedSpan startInternal(String name) {
        return start(tracer().spanBuilder(name).setSpanKind(SpanKind.INTERNAL));
    }

    @Override
    public TracedSpan startProcess(String consumer, W3cContext message) {
        SpanBuilder builder = tracer().spanBuilder("process").setSpanKind(SpanKind.CONSUMER)
                .setAttribute(OPERATION_NAME, "process").setAttribute(OPERATION_TYPE, "process")
                .setAttribute(CONSUMER_GROUP, consumer);
        SpanContext created = creationContext(message);
        if (created != null) {
            builder.addLink(created);
            Context current = Context.current();
            if (!Span.fromContext(current).getSpanContext().isValid()) {
                builder.setParent(current.with(Span.wrap(created)));
            }
        }
        return start(builder);
    }

    @Override
    public TracedSpan startBatchProcess(String consumer, List<W3cContext> messages) {
        SpanBuilder builder = tracer().spanBuilder("process").setSpanKind(SpanKind.CONSUMER)
                .setAttribute(OPERATION_NAME, "process").setAttribute(OPERATION_TYPE, "process")
                .setAttribute(CONSUMER_GROUP, consumer).setAttribute(BATCH_COUNT, (long) messages.size());
        for (W3cContext message : messages) {
            SpanContext created = creationContext(message);
            if (created != null) {
                builder.addLink(created);
            }
        }
        return start(builder);
    }

    @Override
    public TracedSpan startSend(String system, List<OutboxEvent> events) {
        String destination = events.isEmpty() ? null : events.get(0).topic();
        for (OutboxEvent event : events) {
            if (!event.topic().equals(destination)) {
                destination = null;
                break;
            }
        }
        SpanBuilder builder = tracer().spanBuilder(destination == null ? "send" : "send " + destination)
                .setSpanKind(SpanKind.PRODUCER)
                .setAttribute(SYSTEM, system).setAttribute(OPERATION_NAME, "send").setAttribute(OPERATION_TYPE, "send");
        if (destination != null) {
            builder.setAttribute(DESTINATION, destination);
        }
        if (events.size() == 1) {
            builder.setAttribute(MESSAGE_ID, events.get(0).messageId());
        } else {
            builder.setAttribute(BATCH_COUNT, (long) events.size());
        }
        for (OutboxEvent event : events) {
            SpanContext created = creationContext(event.traceparent() == null ? null
                    : new W3cContext(event.traceparent(), event.tracestate()));
            if (created != null) {
                builder.addLink(created);
            }
        }
        return start(builder);
    }

    /** The remote span context {@code message} names, or null. */
    private static SpanContext creationContext(W3cContext message) {
        if (message == null) {
            return null;
        }
        SpanContext context = Span.fromContext(W3C.extract(Context.root(), message, FROM_CONTEXT)).getSpanContext();
        return context.isValid() ? context : null;
    }

    private static TracedSpan start(SpanBuilder builder) {
        Span span = builder.startSpan();
        return new OpenTelemetrySpan(span, span.makeCurrent());
    }

    private record OpenTelemetrySpan(Span span, Scope scope) implements TracedSpan {
        @Override
        public void outcome(String outcome) {
            span.setAttribute(OUTCOME, outcome);
        }

        @Override
        public void messages(String outcome, long count) {
            span.setAttribute(MESSAGES_PREFIX + outcome, count);
        }

        @Override
        public void error(String errorType) {
            span.setAttribute(ERROR_TYPE, errorType);
            span.setStatus(StatusCode.ERROR);
        }

        @Override
        public void close() {
            scope.close();
            span.end();
        }
    }
}

package dev.idempotency.core.internal.tracing;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.tracing.Tracing;
import java.util.List;

/**
 * What the library's modules do with tracing, behind one indirection (HikariCP's way with optional
 * backends): {@link #of(Tracing)} gives the OpenTelemetry implementation only when tracing is on and
 * the OpenTelemetry API is on the classpath (checked once), else {@link #none()}, which loads and
 * costs nothing. Span names and attributes follow OpenTelemetry's messaging conventions; keys,
 * tenants and payloads never become attributes. Not API.
 */
public interface Traces {

    /** Tracing off: no context read, no span. */
    static Traces none() {
        return NoTraces.INSTANCE;
    }

    /** The implementation for {@code tracing}: OpenTelemetry's when on and its API is present, else {@link #none()}. */
    static Traces of(Tracing tracing) {
        if (!tracing.enabled() || !ApiPresence.OPEN_TELEMETRY) {
            return none();
        }
        return dev.idempotency.core.internal.tracing.otel.OpenTelemetryTraces.create(tracing.openTelemetry().orElse(null));
    }

    /** The W3C context of the span current on this thread, or null when none is. */
    W3cContext current();

    /**
     * Starts an INTERNAL span named {@code name} (a low-cardinality operation name such as
     * {@code IdempotentExecutor.run}), a child of the current span and current until closed.
     */
    TracedSpan startInternal(String name);

    /**
     * Starts the CONSUMER span of processing one message, current until closed: a child of the
     * message's creation context {@code message} when no span is current (else of the current one), and
     * linked to it either way, as the messaging conventions allow for one message.
     *
     * @param consumer the consumer's name ({@code messaging.consumer.group.name})
     * @param message the context the message carried, or null
     */
    TracedSpan startProcess(String consumer, W3cContext message);

    /**
     * Starts the CONSUMER span of processing a batch of messages in one call, current until closed: a
     * child of the current span (a batch has no one creation context to continue), linked to each
     * message's, with {@code messaging.batch.message_count}, as the messaging conventions have it for batches.
     *
     * @param consumer the consumer's name ({@code messaging.consumer.group.name})
     * @param messages the contexts the messages carried; nulls are skipped
     */
    TracedSpan startBatchProcess(String consumer, List<W3cContext> messages);

    /**
     * Starts the PRODUCER span of one publish call of the relay, linked to each event's creation
     * context (the writer's, stored with it), with {@code messaging.system}, the destination when all
     * events share one, the message id of a single event and the count of a batch.
     */
    TracedSpan startSend(String system, List<OutboxEvent> events);

    /** Whether the OpenTelemetry API is on the classpath: asked once, by name, loading nothing else of it. */
    final class ApiPresence {
        static final boolean OPEN_TELEMETRY = present("io.opentelemetry.api.trace.Span");

        private ApiPresence() {
        }

        private static boolean present(String className) {
            try {
                Class.forName(className, false, Traces.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException | LinkageError e) {
                return false;
            }
        }
    }
}

package dev.idempotency.core.outbox;

import dev.idempotency.core.internal.tracing.W3cContext;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One committed outbox event as a publisher receives it. {@link #messageId()} is globally unique
 * and stable across redeliveries: publishers send it as the message id so brokers and consumers can
 * drop duplicates. {@link #id()} is the outbox row id, which orders a key's events in one outbox but
 * repeats across outboxes (two services, two schemas, a rebuilt database), so it is never a dedup id.
 *
 * @param id the outbox row id: publish order within one outbox, and diagnostics
 * @param messageId the message's dedup id, fixed when the event was written: a random UUID (or, for
 *                  a row written before migration V3, its outbox id in decimal, the id it was first
 *                  sent under); printable ASCII, at most {@value #MAX_MESSAGE_ID_LENGTH} characters
 * @param tenant the tenant that emitted the event
 * @param topic the destination (Kafka topic, AMQP routing key, NATS subject, webhook path)
 * @param partitionKey events with the same tenant, topic and partition key are published in id order
 * @param payloadJson the payload as JSON text
 * @param headers string headers recorded with the event
 * @param createdAt when the emitting transaction wrote the event (database clock)
 * @param attempt 1 for the first publish attempt, 2 for the first retry, and so on
 * @param traceparent the W3C {@code traceparent} of the span current when the event was written (its
 *                    creation context), or null when none was (tracing off, or no span); a retry keeps it
 * @param tracestate the W3C {@code tracestate} stored with it, or null
 */
public record OutboxEvent(long id, String messageId, String tenant, String topic, String partitionKey,
                          String payloadJson, Map<String, String> headers, Instant createdAt, int attempt,
                          String traceparent, String tracestate) {
    /** Longest accepted message id, so that it fits every broker's message id field and a consumer's key. */
    public static final int MAX_MESSAGE_ID_LENGTH = 128;

    public OutboxEvent {
        requireMessageId(messageId);
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(partitionKey, "partitionKey");
        Objects.requireNonNull(payloadJson, "payloadJson");
        headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
        Objects.requireNonNull(createdAt, "createdAt");
        if (traceparent != null || tracestate != null) {
            new W3cContext(traceparent, tracestate); // throws IllegalArgumentException unless well-formed
        }
    }

    /** An event without trace context. */
    public OutboxEvent(long id, String messageId, String tenant, String topic, String partitionKey,
                       String payloadJson, Map<String, String> headers, Instant createdAt, int attempt) {
        this(id, messageId, tenant, topic, partitionKey, payloadJson, headers, createdAt, attempt, null, null);
    }

    /**
     * The headers that carry the event's creation context, as the W3C Trace Context recommendation
     * names them: {@code traceparent} and, when stored, {@code tracestate}; empty when the event has
     * none. Publishers send them unchanged in the broker's own header field, so that a consumer's
     * standard instrumentation continues the writer's trace.
     */
    public Map<String, String> traceHeaders() {
        if (traceparent == null) {
            return Map.of();
        }
        Map<String, String> trace = new LinkedHashMap<>(2);
        trace.put(W3cContext.TRACEPARENT, traceparent);
        if (tracestate != null) {
            trace.put(W3cContext.TRACESTATE, tracestate);
        }
        return trace;
    }

    // Every publisher puts the id in a header field (HTTP, AMQP short string, NATS): printable ASCII fits all.
    private static void requireMessageId(String messageId) {
        Objects.requireNonNull(messageId, "messageId");
        boolean printable = !messageId.isEmpty() && messageId.length() <= MAX_MESSAGE_ID_LENGTH;
        // A loop, not a stream: a relay checks every event it reads.
        for (int i = 0; printable && i < messageId.length(); i++) {
            char c = messageId.charAt(i);
            printable = c > 0x20 && c < 0x7F;
        }
        if (!printable) {
            throw new IllegalArgumentException("messageId must be 1 to " + MAX_MESSAGE_ID_LENGTH
                    + " printable ASCII characters without spaces");
        }
    }
}

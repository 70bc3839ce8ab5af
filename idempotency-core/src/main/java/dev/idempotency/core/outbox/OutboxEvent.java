package dev.idempotency.core.outbox;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * One committed outbox event as a publisher receives it. {@link #id()} is unique and stable across
 * redeliveries: publishers send it as the message id so brokers and consumers can drop duplicates.
 *
 * @param id the outbox row id, the message's dedup id
 * @param tenant the tenant that emitted the event
 * @param topic the destination (Kafka topic, AMQP routing key, NATS subject, webhook path)
 * @param partitionKey events with the same tenant, topic and partition key are published in id order
 * @param payloadJson the payload as JSON text
 * @param headers string headers recorded with the event
 * @param createdAt when the emitting transaction wrote the event (database clock)
 * @param attempt 1 for the first publish attempt, 2 for the first retry, and so on
 */
public record OutboxEvent(long id, String tenant, String topic, String partitionKey, String payloadJson,
                          Map<String, String> headers, Instant createdAt, int attempt) {
    public OutboxEvent {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(partitionKey, "partitionKey");
        Objects.requireNonNull(payloadJson, "payloadJson");
        headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
        Objects.requireNonNull(createdAt, "createdAt");
    }

    /** The message id publishers send: the event id in decimal. */
    public String messageId() {
        return Long.toString(id);
    }
}

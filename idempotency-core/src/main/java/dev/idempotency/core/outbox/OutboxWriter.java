package dev.idempotency.core.outbox;

import java.util.Map;

/**
 * Records outbox events in the caller's transaction: they commit with it and are then published at
 * least once, in order per {@code (tenant, topic, partitionKey)}; if the transaction rolls back
 * they never existed.
 */
public interface OutboxWriter {
    /** Longest accepted topic, in characters. */
    int MAX_TOPIC_LENGTH = 255;
    /** Longest accepted partition key, in characters. */
    int MAX_PARTITION_KEY_LENGTH = 255;
    /** Longest accepted header name, in characters. */
    int MAX_HEADER_NAME_LENGTH = 255;
    /** Longest accepted header value, in characters. */
    int MAX_HEADER_VALUE_LENGTH = 4096;

    /** Records {@code payload}, serialized to JSON by the executor's mapper. */
    default void publish(String topic, String partitionKey, Object payload) {
        publish(topic, partitionKey, payload, Map.of());
    }

    /** Records {@code payload}, serialized to JSON, with string headers that travel with the message. */
    void publish(String topic, String partitionKey, Object payload, Map<String, String> headers);

    /** Records a payload that is already JSON text; it must parse as JSON. */
    default void publishJson(String topic, String partitionKey, String json) {
        publishJson(topic, partitionKey, json, Map.of());
    }

    /** Records a payload that is already JSON text, with headers. */
    void publishJson(String topic, String partitionKey, String json, Map<String, String> headers);
}

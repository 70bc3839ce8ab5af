package dev.idempotency.outbox;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.outbox.OutboxEvent;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The columns of one event as the relay's reads return them (outbox_events on the publish path,
 * outbox_retries on the retry path), before decoding. {@code traceparent} and {@code tracestate} are
 * as stored (V9), null when the writer had no trace.
 */
record EventRow(long id, String messageId, String tenant, String topic, String partitionKey, String payload,
                String headers, OffsetDateTime createdAt, int attempts, int partition, long ageMillis,
                boolean heldBack, String traceparent, String tracestate) {
    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final String NO_HEADERS = "{}";

    static EventRow read(ResultSet rs) throws SQLException {
        return new EventRow(rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"), rs.getString("topic"),
                rs.getString("partition_key"), rs.getString("payload"), rs.getString("headers"),
                rs.getObject("created_at", OffsetDateTime.class), rs.getInt("attempts"),
                rs.getInt("partition_no"), rs.getLong("age_millis"), rs.getBoolean("held_back"),
                rs.getString("traceparent"), rs.getString("tracestate"));
    }

    /** The claimed event, or, when the row cannot be decoded, one carrying the reason. */
    ClaimedEvent decode(long epoch, long claimedAt) {
        ClaimedEvent.OrderingKey key = new ClaimedEvent.OrderingKey(tenant, topic, partitionKey);
        try {
            // A malformed trace context (another writer's) is left out, never held against the event.
            W3cContext trace = W3cContext.lenient(traceparent, tracestate);
            OutboxEvent event = new OutboxEvent(id, messageId, tenant, topic, partitionKey, payload,
                    decodeHeaders(headers), createdAt.toInstant(), attempts + 1,
                    trace == null ? null : trace.traceparent(), trace == null ? null : trace.tracestate());
            return new ClaimedEvent(id, key, partition, epoch, attempts, ageMillis, claimedAt, heldBack, event, null);
        } catch (RuntimeException | JsonProcessingException e) {
            return new ClaimedEvent(id, key, partition, epoch, attempts, ageMillis, claimedAt, heldBack, null,
                    "undecodable outbox row: " + e.getMessage());
        }
    }

    private static Map<String, String> decodeHeaders(String json) throws JsonProcessingException {
        if (NO_HEADERS.equals(json)) {
            return Map.of(); // what most events carry, as PostgreSQL prints an empty jsonb object: no parse
        }
        JsonNode node = JSON.readTree(json);
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("headers are not a JSON object");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> field : node.properties()) {
            if (!field.getValue().isTextual()) {
                throw new IllegalArgumentException("header '" + field.getKey() + "' is "
                        + field.getValue().getNodeType().name().toLowerCase() + ", not a string");
            }
            headers.put(field.getKey(), field.getValue().textValue());
        }
        return headers;
    }
}

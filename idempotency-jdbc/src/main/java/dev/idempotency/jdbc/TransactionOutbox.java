package dev.idempotency.jdbc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.core.internal.Labels;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.outbox.OutboxWriter;
import dev.idempotency.jdbc.internal.JdbcStatement;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The outbox of one callback transaction. Events are checked when published and written in the
 * same statement as the result, so a callback that fails leaves none behind and the ordering-key
 * locks are held only for the transaction's last moments. Each event keeps the W3C trace context
 * current when it was published, when tracing is on ({@link Traces#current()}).
 */
final class TransactionOutbox implements OutboxWriter {
    private final String tenant;
    private final ObjectMapper mapper;
    private final int maxPayloadBytes;
    private final Traces traces;
    private final List<Event> events = new ArrayList<>();
    /** Whether an event has a trace context, so the completion names the trace columns. */
    private boolean traced;
    private boolean open = true;

    /** @param trace the context current at publish, or null */
    private record Event(String topic, String partitionKey, String payloadJson, String headersJson, W3cContext trace) {
        String traceparent() {
            return trace == null ? null : trace.traceparent();
        }

        String tracestate() {
            return trace == null ? null : trace.tracestate();
        }

        /** The text whose hash is the key's lock: V8's trigger and the ordering_hash column join it the same way. */
        String orderingKey(String tenant) {
            return tenant + "/" + topic + "/" + partitionKey;
        }
    }

    TransactionOutbox(String tenant, ObjectMapper mapper, int maxPayloadBytes, Traces traces) {
        this.tenant = tenant;
        this.mapper = mapper;
        this.maxPayloadBytes = maxPayloadBytes;
        this.traces = traces;
    }

    @Override
    public void publish(String topic, String partitionKey, Object payload, Map<String, String> headers) {
        Objects.requireNonNull(payload, "payload must not be null");
        String json;
        try {
            json = mapper.writeValueAsString(payload);
        } catch (JsonProcessingException | RuntimeException | StackOverflowError e) {
            throw new IllegalArgumentException("payload of type " + payload.getClass().getName()
                    + " cannot be serialized to JSON: " + e.getMessage(), e);
        }
        add(topic, partitionKey, json, headers);
    }

    @Override
    public void publishJson(String topic, String partitionKey, String json, Map<String, String> headers) {
        Objects.requireNonNull(json, "payload must not be null");
        try {
            mapper.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("payload is not valid JSON (" + RedactedErrors.jsonProblem(e) + ")",
                    RedactedErrors.jsonStandIn(e));
        }
        add(topic, partitionKey, json, headers);
    }

    private void add(String topic, String partitionKey, String json, Map<String, String> headers) {
        if (!open) {
            throw new IllegalStateException("this transaction has ended; publish outbox events inside the callback");
        }
        Labels.requireLabel("topic", topic, MAX_TOPIC_LENGTH);
        Labels.requireLabel("partitionKey", partitionKey, MAX_PARTITION_KEY_LENGTH);
        int size = json.getBytes(StandardCharsets.UTF_8).length;
        if (size > maxPayloadBytes) {
            throw new IllegalArgumentException("payload is " + size + " bytes of JSON, over the configured maximum of "
                    + maxPayloadBytes + " (IdempotencyConfig.maxOutboxPayloadBytes)");
        }
        Objects.requireNonNull(headers, "headers must not be null (use Map.of())");
        headers.forEach((name, value) -> {
            Labels.requireLabel("header name", name, MAX_HEADER_NAME_LENGTH);
            Labels.requireLabel("header " + name, value, MAX_HEADER_VALUE_LENGTH);
        });
        try {
            W3cContext trace = traces.current();
            traced |= trace != null;
            events.add(new Event(topic, partitionKey, json, mapper.writeValueAsString(headers), trace));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a map of strings always serializes", e);
        }
    }

    /** Forgets what the callback published: its transaction rolled back to before it. */
    void discard() {
        events.clear();
        traced = false;
    }

    /** Stops accepting events once the callback has returned. */
    void close() {
        open = false;
    }

    int size() {
        return events.size();
    }

    /**
     * Of the completions for no event, one and several ({@link ExecutorSql}), each without and with the
     * trace context columns, the one whose parameters {@link #bindEvents} binds for the events
     * published: here, so the two cannot disagree.
     */
    <T> T completion(T none, T one, T several, T oneTraced, T severalTraced) {
        return events.isEmpty() ? none : events.size() == 1 ? (traced ? oneTraced : one) : (traced ? severalTraced : several);
    }

    /**
     * Binds the buffered events, in emission order, onto the statement {@link #completion} chose:
     * nothing for none, one as plain values, several as arrays.
     */
    void bindEvents(JdbcStatement.Call completion) throws java.sql.SQLException {
        if (events.isEmpty()) {
            return;
        }
        completion.integer("lockSpace", ExecutorSql.OUTBOX_LOCK_SPACE);
        if (events.size() == 1) {
            Event event = events.get(0);
            completion.text("orderingKey", event.orderingKey(tenant))
                    .text("topic", event.topic())
                    .text("partitionKey", event.partitionKey())
                    .text("payload", event.payloadJson())
                    .text("headers", event.headersJson());
            if (traced) {
                completion.text("traceparent", event.traceparent()).text("tracestate", event.tracestate());
            }
            return;
        }
        List<String> orderingKeys = new ArrayList<>(events.size());
        List<String> topics = new ArrayList<>(events.size());
        List<String> partitionKeys = new ArrayList<>(events.size());
        List<String> payloads = new ArrayList<>(events.size());
        List<String> headers = new ArrayList<>(events.size());
        for (Event event : events) {
            orderingKeys.add(event.orderingKey(tenant));
            topics.add(event.topic());
            partitionKeys.add(event.partitionKey());
            payloads.add(event.payloadJson());
            headers.add(event.headersJson());
        }
        completion.textArray("orderingKeys", orderingKeys)
                .textArray("topics", topics)
                .textArray("partitionKeys", partitionKeys)
                .textArray("payloads", payloads)
                .textArray("headers", headers);
        if (traced) {
            completion.textArray("traceparents", events.stream().map(Event::traceparent).toList())
                    .textArray("tracestates", events.stream().map(Event::tracestate).toList());
        }
    }
}

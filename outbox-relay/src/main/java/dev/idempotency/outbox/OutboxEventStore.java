package dev.idempotency.outbox;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.idempotency.core.outbox.OutboxEvent;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;

/**
 * Reads batches of pending outbox rows and writes their outcomes. Each write is one statement for
 * the whole batch and is fenced: it changes only rows of partitions this instance still holds with
 * the epoch it claimed them under, and reports the partitions for which that check failed.
 */
final class OutboxEventStore {
    /** Longest error text stored in {@code last_error}, in characters. */
    static final int MAX_ERROR_LENGTH = 2000;

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    /** Most key-scan rounds one claim makes while the keys it finds have nothing due. */
    private static final int MAX_ROUNDS = 8;

    /** An attempt that failed and will be retried after {@code delayMillis}. */
    record FailedAttempt(ClaimedEvent event, long delayMillis, String error) {
    }

    /** An event to dead-letter; {@code attempted} is false for a row that was never sent (undecodable). */
    record DeadLetter(ClaimedEvent event, boolean attempted, String error) {
    }

    private final Jdbi jdbi;
    private final String instanceId;
    private final int partitions;
    private final int batchSize;
    private final int maxEventsPerKey;
    private final PendingKeyScan keys;
    private final String pendingEvents;
    private final String markPublished;
    private final String recordFailures;
    private final String deadLetter;

    OutboxEventStore(Jdbi jdbi, OutboxRelayConfig config, RelaySql sql) {
        this.jdbi = jdbi;
        this.instanceId = config.instanceId();
        this.partitions = config.partitions();
        this.batchSize = config.batchSize();
        this.maxEventsPerKey = config.maxEventsPerKey();
        this.keys = new PendingKeyScan(jdbi, config, sql);
        this.pendingEvents = sql.pendingEvents;
        this.markPublished = sql.markPublished;
        this.recordFailures = sql.recordFailures;
        this.deadLetter = sql.deadLetter;
    }

    /**
     * The next batch of due events of these partitions (partition to lease epoch): keys chosen by
     * {@link PendingKeyScan}, each with its first events in id order. When the chosen keys have
     * nothing due (all waiting for retries), it goes on with the next keys, a few rounds at most.
     */
    List<ClaimedEvent> claim(Map<Integer, Long> leases) {
        if (leases.isEmpty()) {
            return List.of();
        }
        // Enough hashes to find a batch's worth of keys when this instance holds only some partitions.
        int budget = batchSize * Math.min(16, (partitions + leases.size() - 1) / leases.size());
        for (int round = 0; round < MAX_ROUNDS; round++) {
            List<Integer> hashes = keys.next(leases.keySet(), batchSize, budget);
            List<Row> rows = hashes.isEmpty() ? List.of() : jdbi.withHandle(h -> h.createQuery(pendingEvents)
                    .bind("partitions", partitions)
                    .bind("maxPerKey", maxEventsPerKey)
                    .bind("batchSize", batchSize)
                    .bindArray("hashes", Integer.class, hashes)
                    .map((rs, ctx) -> Row.read(rs))
                    .list());
            if (!rows.isEmpty()) {
                long claimedAt = System.nanoTime();
                List<ClaimedEvent> events = new ArrayList<>(rows.size());
                for (Row row : rows) {
                    events.add(row.decode(leases.get(row.partition), claimedAt));
                }
                return events;
            }
            if (keys.lapCompleted()) {
                break;
            }
        }
        return List.of();
    }

    /** Marks events published; returns the partitions (to epoch) whose lease failed the fence. */
    Map<Integer, Long> markPublished(List<ClaimedEvent> events) {
        if (events.isEmpty()) {
            return Map.of();
        }
        Map<Integer, Long> claimed = leasesOf(events);
        List<Integer> held = jdbi.withHandle(h -> h.createQuery(markPublished)
                .bind("instance", instanceId)
                .bind("partitions", partitions)
                .bindArray("partitionNos", Integer.class, List.copyOf(claimed.keySet()))
                .bindArray("epochs", Long.class, List.copyOf(claimed.values()))
                .bindArray("ids", Long.class, events.stream().map(ClaimedEvent::id).toList())
                .mapTo(Integer.class)
                .list());
        return fenced(claimed, held);
    }

    /** Records failed attempts with their retry delays; returns the partitions whose lease failed the fence. */
    Map<Integer, Long> recordFailures(List<FailedAttempt> failures) {
        if (failures.isEmpty()) {
            return Map.of();
        }
        Map<Integer, Long> claimed = leasesOf(failures.stream().map(FailedAttempt::event).toList());
        List<Integer> held = jdbi.withHandle(h -> h.createQuery(recordFailures)
                .bind("instance", instanceId)
                .bind("partitions", partitions)
                .bindArray("partitionNos", Integer.class, List.copyOf(claimed.keySet()))
                .bindArray("epochs", Long.class, List.copyOf(claimed.values()))
                .bindArray("ids", Long.class, failures.stream().map(f -> f.event().id()).toList())
                .bindArray("delayMillis", Long.class, failures.stream().map(FailedAttempt::delayMillis).toList())
                .bindArray("errors", String.class, failures.stream().map(f -> storable(f.error())).toList())
                .mapTo(Integer.class)
                .list());
        return fenced(claimed, held);
    }

    /** Dead-letters events with their errors; returns the partitions whose lease failed the fence. */
    Map<Integer, Long> deadLetter(List<DeadLetter> deadLetters) {
        if (deadLetters.isEmpty()) {
            return Map.of();
        }
        Map<Integer, Long> claimed = leasesOf(deadLetters.stream().map(DeadLetter::event).toList());
        List<Integer> held = jdbi.withHandle(h -> h.createQuery(deadLetter)
                .bind("instance", instanceId)
                .bind("partitions", partitions)
                .bindArray("partitionNos", Integer.class, List.copyOf(claimed.keySet()))
                .bindArray("epochs", Long.class, List.copyOf(claimed.values()))
                .bindArray("ids", Long.class, deadLetters.stream().map(d -> d.event().id()).toList())
                .bindArray("increments", Integer.class, deadLetters.stream().map(d -> d.attempted() ? 1 : 0).toList())
                .bindArray("errors", String.class, deadLetters.stream().map(d -> storable(d.error())).toList())
                .mapTo(Integer.class)
                .list());
        return fenced(claimed, held);
    }

    /** Error text as stored: bounded, and without NUL characters, which PostgreSQL text cannot hold. */
    static String storable(String error) {
        String text = error == null ? "(no message)" : error.replace('\u0000', ' ');
        return text.length() <= MAX_ERROR_LENGTH ? text : text.substring(0, MAX_ERROR_LENGTH - 3) + "...";
    }

    private static Map<Integer, Long> leasesOf(List<ClaimedEvent> events) {
        Map<Integer, Long> leases = new LinkedHashMap<>();
        for (ClaimedEvent event : events) {
            leases.put(event.partition(), event.epoch());
        }
        return leases;
    }

    private static Map<Integer, Long> fenced(Map<Integer, Long> claimed, List<Integer> held) {
        Map<Integer, Long> lost = new HashMap<>(claimed);
        held.forEach(lost::remove);
        return lost;
    }

    /** The columns of one claimed row, before decoding. */
    private record Row(long id, String messageId, String tenant, String topic, String partitionKey, String payload,
                       String headers, OffsetDateTime createdAt, int attempts, int partition, long ageMillis) {
        static Row read(ResultSet rs) throws SQLException {
            return new Row(rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"), rs.getString("topic"),
                    rs.getString("partition_key"), rs.getString("payload"), rs.getString("headers"),
                    rs.getObject("created_at", OffsetDateTime.class), rs.getInt("attempts"),
                    rs.getInt("partition_no"), rs.getLong("age_millis"));
        }

        ClaimedEvent decode(long epoch, long claimedAt) {
            ClaimedEvent.OrderingKey key = new ClaimedEvent.OrderingKey(tenant, topic, partitionKey);
            try {
                OutboxEvent event = new OutboxEvent(id, messageId, tenant, topic, partitionKey, payload,
                        decodeHeaders(headers), createdAt.toInstant(), attempts + 1);
                return new ClaimedEvent(id, key, partition, epoch, attempts, ageMillis, claimedAt, event, null);
            } catch (RuntimeException | JsonProcessingException e) {
                return new ClaimedEvent(id, key, partition, epoch, attempts, ageMillis, claimedAt, null,
                        "undecodable outbox row: " + e.getMessage());
            }
        }

        private static Map<String, String> decodeHeaders(String json) throws JsonProcessingException {
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
}

package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;

/**
 * The retry path: reads the due retries of held partitions from {@code outbox_retries} (per key its
 * first rows in event id order, when the first is due) and records their outcomes with one fenced
 * statement: published retries are deleted, failed ones rescheduled, exhausted ones dead-lettered.
 */
final class RetryQueue {
    /** Longest error text stored in {@code last_error}, in characters. */
    static final int MAX_ERROR_LENGTH = 2000;

    /** Most key-scan rounds one claim makes while the keys it finds have nothing due. */
    private static final int MAX_ROUNDS = 8;

    private final Jdbi jdbi;
    private final String instanceId;
    private final int partitions;
    private final int batchSize;
    private final int maxEventsPerKey;
    private final PendingKeyScan keys;
    private final String pendingRetries;
    private final String settleRetries;
    private boolean nonePending;

    RetryQueue(Jdbi jdbi, OutboxRelayConfig config, RelaySql sql) {
        this.jdbi = jdbi;
        this.instanceId = config.instanceId();
        this.partitions = config.partitions();
        this.batchSize = config.batchSize();
        this.maxEventsPerKey = config.maxEventsPerKey();
        this.keys = new PendingKeyScan(jdbi, config, sql);
        this.pendingRetries = sql.pendingRetries;
        this.settleRetries = sql.settleRetries;
    }

    /**
     * The next due retries of these partitions (partition to lease epoch): keys chosen by
     * {@link PendingKeyScan}, each with its first retries in id order. When the chosen keys have
     * nothing due (all waiting for their backoff), it goes on with the next keys, a few rounds at most.
     */
    List<ClaimedEvent> claim(Map<Integer, Long> leases) {
        nonePending = false;
        if (leases.isEmpty()) {
            return List.of();
        }
        boolean anyKey = false;
        // Enough hashes to find a batch's worth of keys when this instance holds only some partitions.
        int budget = batchSize * Math.min(16, (partitions + leases.size() - 1) / leases.size());
        for (int round = 0; round < MAX_ROUNDS; round++) {
            List<Integer> hashes = keys.next(leases.keySet(), batchSize, budget);
            anyKey |= !hashes.isEmpty();
            List<EventRow> rows = hashes.isEmpty() ? List.of() : jdbi.withHandle(h -> h.createQuery(pendingRetries)
                    .bind("partitions", partitions)
                    .bind("maxPerKey", maxEventsPerKey)
                    .bind("batchSize", batchSize)
                    .bindByType("hashes", hashes, BoundArrays.INTEGERS)
                    .map((rs, ctx) -> EventRow.read(rs))
                    .list());
            if (!rows.isEmpty()) {
                long claimedAt = System.nanoTime();
                List<ClaimedEvent> events = new ArrayList<>(rows.size());
                for (EventRow row : rows) {
                    events.add(row.decode(leases.get(row.partition()), claimedAt));
                }
                return events;
            }
            if (keys.lapCompleted()) {
                nonePending = !anyKey;
                break;
            }
        }
        return List.of();
    }

    /**
     * Whether the last {@link #claim} went round every pending retry and found none of the given
     * partitions: until this relay moves an event aside or takes a partition, none is due.
     */
    boolean nonePending() {
        return nonePending;
    }

    /** Records a retry round's outcomes; returns the partitions (to epoch) whose lease failed the fence. */
    Map<Integer, Long> settle(Settlement outcomes) {
        if (outcomes.isEmpty()) {
            return Map.of();
        }
        List<Long> ids = new ArrayList<>();
        List<String> actions = new ArrayList<>();
        List<Integer> increments = new ArrayList<>();
        List<Long> delays = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        Map<Integer, Long> claimed = new LinkedHashMap<>();
        for (ClaimedEvent event : outcomes.published) {
            add(ids, actions, increments, delays, errors, event.id(), "published", 0, 0, null);
            claimed.put(event.partition(), event.epoch());
        }
        for (Settlement.Failed failed : outcomes.failed) {
            add(ids, actions, increments, delays, errors, failed.event().id(), "failed",
                    failed.attempts() - failed.event().attempts(), failed.delayMillis(), storable(failed.error()));
            claimed.put(failed.event().partition(), failed.event().epoch());
        }
        for (Settlement.Dead dead : outcomes.dead) {
            add(ids, actions, increments, delays, errors, dead.event().id(), "dead",
                    dead.attempts() - dead.event().attempts(), 0, storable(dead.error()));
            claimed.put(dead.event().partition(), dead.event().epoch());
        }
        List<Integer> held = jdbi.withHandle(h -> h.createQuery(settleRetries)
                .bind("instance", instanceId)
                .bind("partitions", partitions)
                .bindByType("partitionNos", List.copyOf(claimed.keySet()), BoundArrays.INTEGERS)
                .bindByType("epochs", List.copyOf(claimed.values()), BoundArrays.BIGINTS)
                .bindByType("ids", ids, BoundArrays.BIGINTS)
                .bindByType("actions", actions, BoundArrays.TEXTS)
                .bindByType("increments", increments, BoundArrays.INTEGERS)
                .bindByType("delays", delays, BoundArrays.BIGINTS)
                .bindByType("errors", errors, BoundArrays.TEXTS)
                .mapTo(Integer.class)
                .list());
        return fenced(claimed, held);
    }

    private static void add(List<Long> ids, List<String> actions, List<Integer> increments, List<Long> delays,
                            List<String> errors, long id, String action, int increment, long delay, String error) {
        ids.add(id);
        actions.add(action);
        increments.add(increment);
        delays.add(delay);
        errors.add(error);
    }

    /** Error text as stored: bounded, and without NUL characters, which PostgreSQL text cannot hold. */
    static String storable(String error) {
        String text = error == null ? "(no message)" : error.replace('\u0000', ' ');
        return text.length() <= MAX_ERROR_LENGTH ? text : text.substring(0, MAX_ERROR_LENGTH - 3) + "...";
    }

    /** The claimed partitions that are not among those that passed the fence. */
    static Map<Integer, Long> fenced(Map<Integer, Long> claimed, List<Integer> held) {
        Map<Integer, Long> lost = new HashMap<>(claimed);
        held.forEach(lost::remove);
        return lost;
    }
}

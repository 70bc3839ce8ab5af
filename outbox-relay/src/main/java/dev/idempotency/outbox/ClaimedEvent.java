package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;

/**
 * An outbox row (or retry) as a read of the relay returned it: either decoded into the {@link OutboxEvent} publishers
 * receive, or, when the row cannot be decoded, the reason (such a row is dead-lettered, never sent).
 *
 * @param id the outbox id
 * @param key the ordering key, known even when the row cannot be decoded
 * @param partition the virtual partition of the row
 * @param epoch the epoch of this instance's lease on that partition at claim time, which fences the writes that record its outcome
 * @param attempts publish attempts already made
 * @param ageMillis now - created_at at claim time, by the database clock
 * @param claimedAtNanos {@link System#nanoTime()} when the claim returned
 * @param heldBack whether its key has a pending retry, so that it must follow that retry instead of going out now
 * @param event the decoded event, or null
 * @param decodeError why the row could not be decoded, or null
 */
record ClaimedEvent(long id, OrderingKey key, int partition, long epoch, int attempts, long ageMillis,
                    long claimedAtNanos, boolean heldBack, OutboxEvent event, String decodeError) {

    /** Events with the same key are published one after another, in id order. */
    record OrderingKey(String tenant, String topic, String partitionKey) {
    }

    boolean decoded() {
        return event != null;
    }
}

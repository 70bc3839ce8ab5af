package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import java.time.Duration;

/**
 * Told what the relay does to each event, for metrics. Calls come from the relay's worker thread,
 * after the broker's answer and before the page is recorded in the database; a listener must be quick
 * and must not block. An exception it throws is logged and otherwise ignored.
 */
public interface OutboxRelayListener {
    /** A listener that ignores everything. */
    OutboxRelayListener NONE = new OutboxRelayListener() {
    };

    /**
     * The broker acknowledged {@code event}. {@code sinceCreated} runs from the event's
     * {@code created_at} (the start of the transaction that wrote it, database clock) to the
     * acknowledgement, without clock skew between this host and the database.
     */
    default void published(OutboxEvent event, Duration sinceCreated) {
    }

    /** An attempt to publish {@code event} failed; it will be retried after a backoff. */
    default void publishFailed(OutboxEvent event, String error) {
    }

    /** Event {@code eventId} was dead-lettered: rejected, out of attempts, or undecodable. */
    default void deadLettered(long eventId, String error) {
    }
}

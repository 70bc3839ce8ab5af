package dev.idempotency.core;

import dev.idempotency.core.outbox.OutboxWriter;

/** The transaction a callback runs in: what it is running for, and where it publishes events. */
public interface IdempotentTransaction {

    /** The idempotency key this transaction runs for. */
    String key();

    /** The tenant the key belongs to. */
    String tenant();

    /** Publishes events that commit with this transaction, or vanish with it. */
    OutboxWriter outbox();
}

package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotentTransaction;
import org.jdbi.v3.core.Handle;

/**
 * The transaction a {@link PostgresIdempotentExecutor} callback runs in: the executor's own, or the
 * caller's when the executor joins it. Business writes made through {@link #handle()} commit
 * together with the stored result and the outbox events, or not at all. Do not commit, roll back or
 * close the handle.
 */
public interface PostgresTransaction extends IdempotentTransaction {

    /** The Jdbi handle of the open transaction (in join mode, over the caller's connection). */
    Handle handle();
}

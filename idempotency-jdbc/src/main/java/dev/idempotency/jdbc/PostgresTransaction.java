package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotentTransaction;
import org.jdbi.v3.core.Handle;

/**
 * The transaction a {@link PostgresIdempotentExecutor} callback runs in. Business writes made
 * through {@link #handle()} commit together with the stored result and the outbox events, or not
 * at all. Do not commit, roll back or close the handle.
 */
public interface PostgresTransaction extends IdempotentTransaction {

    /** The Jdbi handle of the executor's open transaction. */
    Handle handle();
}

package dev.idempotency.jdbc;

import org.jdbi.v3.core.Handle;

/** The transaction handed to one callback run. */
record CallbackTransaction(String key, String tenant, Handle handle, TransactionOutbox outbox)
        implements PostgresTransaction {
}

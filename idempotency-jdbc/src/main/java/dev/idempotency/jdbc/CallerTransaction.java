package dev.idempotency.jdbc;

import java.sql.Connection;
import java.util.Optional;

/**
 * The transaction the application itself has open on the calling thread, as its framework manages
 * it (Spring's transaction management, a hand-written {@code ThreadLocal}, ...). An executor built
 * with {@link PostgresIdempotentExecutor.Builder#joinCallerTransactions(CallerTransaction)} runs
 * inside that transaction; one built with
 * {@link PostgresIdempotentExecutor.Builder#refuseCallerTransactions(CallerTransaction)} refuses to
 * run while one is open. {@code idempotency-spring} has the implementation for Spring.
 *
 * <p>Implementations must be thread-safe: the executor calls them from every caller's thread.
 */
public interface CallerTransaction {

    /**
     * The connection of the transaction the caller has open on this thread, if any: a connection of
     * the executor's database, with auto-commit off. It stays the caller's: the executor never
     * commits, rolls back or closes it, and uses it only while its call runs.
     */
    Optional<Connection> current();

    /**
     * Runs {@code action} on this thread after the transaction {@link #current()} returned commits,
     * and never if it rolls back. Called only while that transaction is open.
     */
    void afterCommit(Runnable action);
}

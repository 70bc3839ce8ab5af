package dev.idempotency.jdbc;

import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.SQLException;
import org.jdbi.v3.core.Handle;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Ends a Jdbi handle's transaction with an unnamed COMMIT or ROLLBACK, so that "commit returned"
 * means "PostgreSQL committed it". pgjdbc's own {@code Connection.commit()} becomes a named
 * server-side statement once a connection has committed prepareThreshold times (and stays one:
 * setting the threshold to 0 later does not unname it), and ignores the command tag. Behind a pooler
 * that hands named statements to other clients' backends our COMMIT could run another client's
 * ROLLBACK, or our ROLLBACK another client's COMMIT, and nobody would see it.
 */
final class PgTransactions {
    private PgTransactions() {
    }

    /** Work inside a transaction; it commits with {@link #commit(Handle)} before it returns. */
    @FunctionalInterface
    interface Work<R, X extends Exception> {
        R run() throws X;
    }

    /**
     * Begins a transaction on {@code handle}, runs {@code work} (which commits), and rolls back if it
     * throws; a rollback that fails too is added to the work's exception as suppressed.
     *
     * <p>The executor's one transaction idiom. Jdbi's own ({@code Handle.inTransaction}) ends the
     * transaction through its {@code TransactionHandler}, i.e. {@code Connection.commit()}, which
     * pgjdbc turns into a named statement and which commits blindly; swapping the handler would mean
     * changing the caller's Jdbi, so this helper keeps Jdbi's shape with our COMMIT and ROLLBACK.
     */
    static <R, X extends Exception> R inTransaction(Handle handle, Work<R, X> work) throws X {
        return inTransactionOpenedByWork(handle, false, opens -> work.run());
    }

    /** Work inside a transaction that its first statement may open itself ({@link #inTransactionOpenedByWork}). */
    @FunctionalInterface
    interface OpeningWork<R, X extends Exception> {
        /**
         * @param opens true when the work's first statement must begin the transaction (sending
         *        {@link ExecutorSql#BEGIN} with it); the work then calls {@link #begun} right after it
         */
        R run(boolean opens) throws X;
    }

    /**
     * {@link #inTransaction}, except that when {@code allowed} and the connection is pgjdbc's, idle and
     * in autocommit, the work's first statement opens the transaction itself, saving pgjdbc's BEGIN
     * ({@link ExecutorSql#BEGIN}); otherwise Jdbi begins as usual. Until the work calls {@link #begun},
     * Jdbi, pgjdbc and the pool all take the connection for one in autocommit, and none of them would
     * end what that statement opened: a failure in between is rolled back here, by the transaction
     * state PostgreSQL reported, before the connection goes back to the pool.
     */
    static <R, X extends Exception> R inTransactionOpenedByWork(Handle handle, boolean allowed, OpeningWork<R, X> work)
            throws X {
        boolean opens = allowed && idleInAutocommit(handle.getConnection());
        if (!opens) {
            handle.begin();
        }
        try {
            return work.run(opens);
        } catch (Throwable e) {
            rollbackAfter(handle, e);
            throw e;
        }
    }

    /** After the work's first statement opened the transaction: Jdbi takes it over, and ends it as usual. */
    static void begun(Handle handle) {
        handle.begin();
    }

    private static boolean idleInAutocommit(Connection connection) {
        BaseConnection pg = pgjdbc(connection);
        try {
            return pg != null && connection.getAutoCommit() && pg.getTransactionState() == TransactionState.IDLE;
        } catch (SQLException e) {
            return false;
        }
    }

    /** Rolls back a transaction {@code failure} left open, keeping a failed rollback as suppressed. */
    private static void rollbackAfter(Handle handle, Throwable failure) {
        if (handle.isClosed()) {
            return;
        }
        try {
            if (handle.isInTransaction()) {
                rollback(handle);
            } else {
                // Jdbi has none open: the work committed before it threw (a stored business failure), or
                // its first statement opened one that Jdbi was not told of yet (inTransactionOpenedByWork).
                rollbackUntold(handle.getConnection());
            }
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    private static void rollbackUntold(Connection connection) {
        BaseConnection pg = pgjdbc(connection);
        if (pg == null || pg.getTransactionState() == TransactionState.IDLE) {
            return;
        }
        try {
            JdbcStatement.executeUnnamed(connection, ExecutorSql.ROLLBACK);
        } catch (RuntimeException e) {
            // The pool would hand it on in autocommit with the transaction still open: closed, it commits nothing.
            try {
                pg.close();
            } catch (SQLException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /**
     * Commits, after checking that PostgreSQL has not aborted the transaction.
     *
     * @throws IllegalStateException when the transaction was aborted by an error that was caught
     *         before the executor saw it; the caller rolls it back, nothing is committed
     */
    static void commit(Handle handle) {
        BaseConnection pg = pgjdbc(handle.getConnection());
        if (pg == null) {
            handle.commit();
            return;
        }
        requireNotAborted(pg);
        JdbcStatement.executeUnnamed(handle.getConnection(), ExecutorSql.COMMIT);
        committed(handle);
    }

    /**
     * Commits by running {@code lastStatements}, which end with {@link ExecutorSql#COMMIT}, after the
     * same check as {@link #commit}; the commit then travels with them in one flush.
     *
     * @throws IllegalStateException as {@link #commit} does; nothing is sent then
     */
    static void commitWith(Handle handle, Runnable lastStatements) {
        BaseConnection pg = pgjdbc(handle.getConnection());
        if (pg != null) {
            requireNotAborted(pg);
        }
        lastStatements.run();
        committed(handle);
    }

    private static void requireNotAborted(BaseConnection pg) {
        if (pg.getTransactionState() == TransactionState.FAILED) {
            throw new IllegalStateException("PostgreSQL aborted this transaction after an error that was caught before "
                    + "the executor saw it (a statement failed inside the callback, or a pooler ran another client's "
                    + "statement); nothing was committed. Let errors of the callback's statements propagate.");
        }
    }

    /** After our COMMIT: pgjdbc sees no open transaction and sends nothing; Jdbi and the pool learn that it ended. */
    private static void committed(Handle handle) {
        handle.commit();
    }

    /** Rolls back; the handle must still be open. */
    static void rollback(Handle handle) {
        try {
            BaseConnection pg = pgjdbc(handle.getConnection());
            if (pg != null && pg.getTransactionState() != TransactionState.IDLE) {
                JdbcStatement.executeUnnamed(handle.getConnection(), ExecutorSql.ROLLBACK);
            }
        } finally {
            handle.rollback();
        }
    }

    private static BaseConnection pgjdbc(Connection connection) {
        try {
            return connection.isWrapperFor(BaseConnection.class) ? connection.unwrap(BaseConnection.class) : null;
        } catch (SQLException e) {
            return null;
        }
    }
}

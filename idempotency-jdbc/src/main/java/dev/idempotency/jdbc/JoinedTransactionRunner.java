package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotentCallback;
import dev.idempotency.core.Outcome;
import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import org.jdbi.v3.core.ConnectionFactory;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Runs a call inside the transaction the caller has open, on its connection: no begin or commit of
 * our own. A savepoint taken with the claim ({@link ExecutorSql#CLAIM_SAVEPOINT}) bounds what the call leaves in the caller's
 * transaction: a replay or a failure rolls back to it (the key row, the callback's writes and the
 * claim's lock_timeout setting are gone, whatever the caller then does); a first run or a stored
 * business failure keeps what it wrote, which then commits or rolls back with the caller.
 */
final class JoinedTransactionRunner {
    private final CallerTransaction caller;
    private final KeyClaims claims;
    private final CallbackRunner callbacks;
    /** The connection {@link #handles} hands out, set only while a handle is being opened. */
    private final ThreadLocal<Connection> opening = new ThreadLocal<>();
    /**
     * Opens handles over the caller's connection. A handle opened on a connection with auto-commit
     * off counts as already in a transaction, so closing it neither commits, rolls back nor throws;
     * the factory never closes the connection.
     */
    private final Jdbi handles;

    JoinedTransactionRunner(CallerTransaction caller, KeyClaims claims, CallbackRunner callbacks) {
        this.caller = caller;
        this.claims = claims;
        this.callbacks = callbacks;
        this.handles = Jdbi.create(new ConnectionFactory() {
            @Override
            public Connection openConnection() {
                return opening.get();
            }

            @Override
            public void closeConnection(Connection connection) {
                // The caller's: its transaction manager releases it.
            }
        }).installPlugin(new PostgresPlugin());
    }

    /** The caller's open transaction's connection, checked; empty when the caller has none. */
    Optional<Connection> callersConnection() {
        Optional<Connection> current = caller.current();
        if (current.isPresent() && autoCommit(current.get())) {
            throw new IllegalStateException("The CallerTransaction " + caller.getClass().getName() + " returned a "
                    + "connection in auto-commit mode, i.e. outside any transaction. Nothing ran; it must return a "
                    + "connection only while a transaction is open on it, and empty otherwise.");
        }
        return current;
    }

    /**
     * Claims the key in the caller's transaction on {@code connection}, then replays or runs the
     * callback. Round trips besides the callback's own: a first run two (the claim with both
     * savepoints; the completion with the claim savepoint's release), a replay three (the claim; the
     * read of the row it found; the rollback to and release of the claim savepoint).
     */
    <T, X extends Exception> Outcome<T> run(Connection connection, String key, String tenant, byte[] digest,
                                            Class<T> resultType,
                                            IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        requireNotAborted(connection, key, tenant);
        try (Handle handle = open(connection)) {
            Optional<StoredKey> stored;
            try {
                stored = claims.claimInCallersTransaction(handle, key, tenant, digest);
            } catch (RuntimeException e) {
                undo(connection, e);
                throw e;
            }
            if (stored.isPresent()) {
                // A replay writes nothing; this also puts back the lock_timeout the claim set to the wait budget.
                undo(connection, null);
                return claims.replay(stored.get(), key, tenant, digest, resultType);
            }
            TransactionOwner.Joined owner = TransactionOwner.joined(caller);
            try {
                // Stores the outcome (a business failure too: it persists if, and only if, the caller commits)
                // and releases the claim savepoint in the same flush.
                return callbacks.runInCallersTransaction(handle, key, tenant, resultType, callback, owner);
            } catch (Throwable e) {
                if (!owner.released()) {
                    undo(connection, e);
                }
                throw e;
            }
        }
    }

    private Handle open(Connection connection) {
        opening.set(connection);
        try {
            return handles.open();
        } finally {
            opening.remove();
        }
    }

    /** PostgreSQL would refuse every statement with "current transaction is aborted": say why, and what to do. */
    private static void requireNotAborted(Connection connection, String key, String tenant) {
        try {
            if (connection.isWrapperFor(BaseConnection.class)
                    && connection.unwrap(BaseConnection.class).getTransactionState() == TransactionState.FAILED) {
                throw new IllegalStateException("The caller's transaction was aborted by an earlier error that was caught, "
                        + "so idempotency key '" + key + "' of tenant '" + tenant + "' cannot be claimed in it. Nothing ran; "
                        + "roll that transaction back and retry in a new one.");
            }
        } catch (SQLException e) {
            throw JdbcStatement.failure(e);
        }
    }

    private static boolean autoCommit(Connection connection) {
        try {
            return connection.getAutoCommit();
        } catch (SQLException e) {
            throw JdbcStatement.failure(e);
        }
    }

    /**
     * Rolls the caller's transaction back to the claim's savepoint and releases it, in one flush.
     * Failing to, after {@code failure}, adds to it: the caller's transaction is then unusable, and
     * its rollback undoes all.
     */
    private static void undo(Connection connection, Throwable failure) {
        try {
            JdbcStatement.executeUnnamed(connection, ExecutorSql.UNDO_CLAIM);
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotentCallback;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.SQLException;
import java.util.function.Function;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a callback in the transaction that claimed its key, then stores what it produced and
 * commits: its result with its outbox events, or (its writes rolled back to a savepoint) its
 * declared business failure. Shared by the one-transaction path, lease mode's completion and runs
 * in a caller's transaction, where the caller commits ({@link TransactionOwner}).
 */
final class CallbackRunner {
    /** The executor's logger, so that users keep one category to configure. */
    private static final Logger log = LoggerFactory.getLogger(PostgresIdempotentExecutor.class);

    /** SQLSTATEs for JSON text PostgreSQL's jsonb refuses (e.g. a \u0000 escape). */
    private static final String UNTRANSLATABLE_CHARACTER = "22P05";
    private static final String INVALID_TEXT_REPRESENTATION = "22P02";
    /** SQLSTATE undefined_column: what the completion raises when events with trace context meet a schema before V9. */
    private static final String UNDEFINED_COLUMN = "42703";
    /** SQLSTATE undefined_object: what the completion raises when it matched no key row. */
    private static final String UNDEFINED_OBJECT = "42704";
    /** Failure code stored when a callback ended the executor's transaction itself. */
    static final String ENDED_BY_CALLBACK = "transaction_ended_by_callback";

    private final IdempotencyConfig config;
    private final ExecutorSql sql;
    private final ResultCodec codec;
    private final Runnable afterOutboxCommit;
    /** Where the outbox reads the trace context current at publish. */
    private final Traces traces;
    /**
     * True once the pooler probe found that no pooler can run another client's statement under a name
     * pgjdbc gave ours (a direct connection, a pooler tracking statements, or unnamed statements
     * only): the executor's COMMIT then travels with the completion ({@link ExecutorSql#thenCommit}),
     * and pgjdbc names it after 5 uses like the rest of that statement. Otherwise it stays a separate
     * unnamed statement ({@link PgTransactions}), a round trip of its own.
     */
    private volatile boolean commitWithCompletion;

    CallbackRunner(IdempotencyConfig config, ExecutorSql sql, ResultCodec codec, Runnable afterOutboxCommit, Traces traces) {
        this.config = config;
        this.traces = traces;
        this.sql = sql;
        this.codec = codec;
        this.afterOutboxCommit = afterOutboxCommit;
    }

    /** Lets the executor's COMMIT travel with the completion, from now on; see {@link #commitWithCompletion}. */
    void commitWithCompletion(boolean allowed) {
        this.commitWithCompletion = allowed;
    }

    /** Whether the executor's COMMIT may travel with a completion; see {@link #commitWithCompletion}. */
    boolean commitsWithCompletion() {
        return commitWithCompletion;
    }

    /** Runs {@code callback} on {@code handle}'s open transaction and commits what it stored. */
    <T, X extends Exception> Outcome<T> run(Handle handle, String key, String tenant, Class<T> resultType,
                                            IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return run(handle, key, tenant, resultType, callback, TransactionOwner.EXECUTOR, false);
    }

    /**
     * Runs {@code callback} on {@code handle}'s open transaction and commits what it stored; the claim
     * already took the callback's savepoint ({@link KeyClaims#claimThenSavepoint}). {@code owner} is the
     * executor's own transaction ({@link TransactionOwner#EXECUTOR}, or a first call that shares what it
     * commits with its duplicates, {@link InFlightCalls}).
     */
    <T, X extends Exception> Outcome<T> runAfterSavepoint(Handle handle, String key, String tenant, Class<T> resultType,
                                                          IdempotentCallback<PostgresTransaction, T, X> callback,
                                                          TransactionOwner owner) throws X {
        return run(handle, key, tenant, resultType, callback, owner, true);
    }

    /**
     * Runs {@code callback} in the caller's transaction, after the claim took the claim's and the
     * callback's savepoints ({@link KeyClaims#claimInCallersTransaction}); stores what it produced
     * and releases the claim's savepoint, and {@code owner} (the caller) commits.
     */
    <T, X extends Exception> Outcome<T> runInCallersTransaction(Handle handle, String key, String tenant,
                                                                Class<T> resultType,
                                                                IdempotentCallback<PostgresTransaction, T, X> callback,
                                                                TransactionOwner.Joined owner) throws X {
        return run(handle, key, tenant, resultType, callback, owner, true);
    }

    private <T, X extends Exception> Outcome<T> run(Handle handle, String key, String tenant, Class<T> resultType,
                                                    IdempotentCallback<PostgresTransaction, T, X> callback,
                                                    TransactionOwner owner, boolean savepointTaken) throws X {
        if (!savepointTaken) {
            JdbcStatement.executeUnnamed(handle.getConnection(), ExecutorSql.CALLBACK_SAVEPOINT);
        }
        TransactionOutbox outbox = new TransactionOutbox(tenant, config.objectMapper(), config.maxOutboxPayloadBytes(), traces);
        T result;
        try {
            result = callback.run(new CallbackTransaction(key, tenant, handle, outbox));
        } catch (BusinessFailure failure) {
            storeFailure(handle, key, tenant, outbox, failure, owner);
            throw failure;
        } catch (RuntimeException e) {
            if (handle.isClosed() || connectionClosed(handle)) {
                // Jdbi refuses to close a handle mid-transaction by throwing from close(): name the real cause.
                throw new IllegalStateException("The callback closed the executor's handle or connection. Nothing was "
                        + "stored; let the executor end the transaction.", e);
            }
            throw e;
        } finally {
            outbox.close();
        }
        requireOpenTransaction(handle, key, tenant);
        ResultCodec.StoredResult stored = codec.encode(result, resultType);
        // Decoded before the commit: a result a replay could not read back fails here, with nothing stored.
        @SuppressWarnings("unchecked")
        T handedOut = (T) codec.firstRunResult(result, stored, resultType);
        storeResult(handle, key, tenant, outbox, stored, owner);
        if (outbox.size() > 0) {
            owner.whenCommitted(this::signalOutboxCommit);
        }
        return Outcome.firstRun(handedOut);
    }

    /**
     * Rolls the callback's writes back to the savepoint, stores its business failure, and ends the
     * executor's part of the transaction ({@link #storeAndEnd}).
     */
    private void storeFailure(Handle handle, String key, String tenant, TransactionOutbox outbox, BusinessFailure failure,
                              TransactionOwner owner) {
        requireOpenTransaction(handle, key, tenant);
        outbox.discard();
        String encoded = codec.encodeFailure(failure);
        // JdbcStatement's failures carry no bound values, so the failure's message and details stay out of them.
        JdbcStatement.Binding binding = call -> call.text("tenant", tenant).text("key", key).text("failure", encoded);
        storeAndEnd(handle, owner, ExecutorSql.Completions::failKey, binding, () -> {
            JdbcStatement.executeUnnamed(handle.getConnection(), ExecutorSql.ROLLBACK_TO_CALLBACK_SAVEPOINT);
            sql.failKey.execute(handle.getConnection(), binding);
        });
        owner.storedFailure(encoded);
        log.debug("stored business failure {} for idempotency key {} of tenant {}", failure.code(), key, tenant);
    }

    /** Stores the result (and the outbox events) and ends the executor's part of the transaction ({@link #storeAndEnd}). */
    private void storeResult(Handle handle, String key, String tenant, TransactionOutbox outbox,
                             ResultCodec.StoredResult stored, TransactionOwner owner) {
        JdbcStatement.Binding binding = call -> {
            call.text("tenant", tenant).text("key", key).text("result", stored.json()).text("resultType", stored.typeName());
            outbox.bindEvents(call);
        };
        try {
            storeAndEnd(handle, owner,
                    ending -> ending.storeResult().of(outbox),
                    binding, () -> sql.storeResult.of(outbox).execute(handle.getConnection(), binding));
        } catch (RuntimeException e) {
            throw completionFailure(e, key, tenant);
        }
        owner.storedResult(stored.json(), stored.typeName());
    }

    /**
     * Runs the statement that stores an outcome and, in the same flush, what ends the executor's part
     * of the transaction: the claim savepoint's release in a caller's transaction; our COMMIT in the
     * executor's own where {@link #commitWithCompletion} allows. Otherwise it runs {@code separately}
     * (the store alone) and commits with a separate unnamed COMMIT.
     */
    private void storeAndEnd(Handle handle, TransactionOwner owner, Function<ExecutorSql.Completions, JdbcStatement> statement,
                             JdbcStatement.Binding binding, Runnable separately) {
        if (owner.ending() == TransactionOwner.Ending.RELEASE_CLAIM_SAVEPOINT) {
            statement.apply(sql.thenReleaseClaim).execute(handle.getConnection(), binding);
        } else if (commitWithCompletion) {
            PgTransactions.commitWith(handle, () -> statement.apply(sql.thenCommit).execute(handle.getConnection(), binding));
        } else {
            separately.run();
            PgTransactions.commit(handle);
        }
        owner.ended();
    }

    /** A failure of the completion as the caller should see it; others unchanged. */
    private RuntimeException completionFailure(RuntimeException e, String key, String tenant) {
        String state = DatabaseErrors.sqlState(e);
        if (UNDEFINED_COLUMN.equals(state) && String.valueOf(DatabaseErrors.rootMessage(e)).contains("traceparent")) {
            // Only a transaction whose events carry a trace context names the V9 columns (ExecutorSql.TRACE_COLUMNS).
            return new SchemaNotMigratedException("The outbox in schema \"" + config.schema() + "\" has no trace context"
                    + " columns (migration V9), which events published with tracing on are stored in; nothing was"
                    + " committed. Apply the migrations with IdempotencyMigrations.migrate(dataSource, \"" + config.schema()
                    + "\") (or the relay's --migrate), or build the executor with tracing(Tracing.disabled()) until then.",
                    config.schema(), e);
        }
        if (UNTRANSLATABLE_CHARACTER.equals(state) || INVALID_TEXT_REPRESENTATION.equals(state)) {
            return new ResultNotStorableException("PostgreSQL refused the result or an outbox payload as jsonb: "
                    + DatabaseErrors.rootMessage(e) + ". Nothing was stored (jsonb cannot hold \\u0000 in strings).", e);
        }
        if (UNDEFINED_OBJECT.equals(state) && String.valueOf(DatabaseErrors.rootMessage(e)).contains(ExecutorSql.KEY_ROW_MISSING)) {
            // The completion matched no key row (ExecutorSql.REQUIRE_ONE_KEY_ROW): the callback deleted it, or a
            // pooler ran another client's statement.
            return new IllegalStateException("The key row that idempotency key '" + key + "' of tenant '" + tenant
                    + "' claimed was not in its transaction when its result was stored; nothing was committed.", e);
        }
        return e;
    }

    /**
     * Refuses to go on when the callback ended the transaction itself. If it committed, the key row
     * is committed as processing with the callback's writes but no result: it is marked failed so
     * that retries see that, rather than a key stuck in progress or a second run.
     */
    private void requireOpenTransaction(Handle handle, String key, String tenant) {
        // Jdbi tracks the transaction itself, so a connection the callback closed still looks "in transaction".
        boolean open = !handle.isClosed() && !connectionClosed(handle);
        if (open && handle.isInTransaction()) {
            return;
        }
        int marked = 0;
        if (open) {
            BusinessFailure unknown = new BusinessFailure(ENDED_BY_CALLBACK, "The callback ended the executor's transaction "
                    + "itself; what it wrote may have been committed without a stored result. Reconcile by hand.");
            String encoded = codec.encodeFailure(unknown);
            marked = sql.failAbandonedKey.update(handle.getConnection(), call -> call
                    .text("tenant", tenant).text("key", key).text("failure", encoded));
        }
        throw new IllegalStateException("The callback committed, rolled back or closed the executor's transaction. "
                + (marked == 1 ? "Its writes were committed without a result; the key is stored as failed with code "
                        + ENDED_BY_CALLBACK + "." : "Nothing was stored.")
                + " Let the executor end the transaction.");
    }

    /** Whether the handle's connection is closed, or cannot say (then it is of no more use). */
    static boolean connectionClosed(Handle handle) {
        try {
            return handle.getConnection().isClosed();
        } catch (SQLException e) {
            return true;
        }
    }

    private void signalOutboxCommit() {
        try {
            afterOutboxCommit.run();
        } catch (RuntimeException e) {
            log.warn("the after-outbox-commit listener failed; the relay will find the events by polling", e);
        }
    }
}

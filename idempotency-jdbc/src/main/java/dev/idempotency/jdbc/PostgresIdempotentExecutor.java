package dev.idempotency.jdbc;

import dev.idempotency.core.CompletionStep;
import dev.idempotency.core.ExternalStep;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotentCallback;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.core.internal.tracing.SpanOutcomes;
import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.internal.PoolerProbe;
import java.sql.Connection;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.LocalTransactionHandler;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link IdempotentExecutor} on PostgreSQL: one transaction claims the key with
 * {@code INSERT ... ON CONFLICT DO NOTHING}, runs the callback on the same Jdbi handle, writes its
 * outbox events and its result, and commits. A concurrent duplicate waits for the first caller's
 * transaction, bounded by the wait budget, then replays what it committed: in this process it waits
 * for the first call itself ({@link InFlightCalls}), holding no connection; from another process it
 * waits on PostgreSQL's own row lock. A later one replays.
 *
 * <p>Transactions run at the isolation level the pool's connections have. At READ COMMITTED (the
 * default) a duplicate that waited on the first caller's row then reads its committed outcome. At
 * REPEATABLE READ or SERIALIZABLE its snapshot predates that commit, so PostgreSQL fails it with a
 * serialization failure, which reaches the caller as {@link TransientFailureException}; its retry
 * replays. Either way the callback runs once. (A duplicate in this process replays the first call's
 * outcome at any level: it never reads the row.)
 *
 * <p>The executor's own statements run on plain JDBC on the handle's connection
 * ({@link ExecutorSql}), so a Jdbi passed to {@link #builder(Jdbi)} with its own template engine,
 * SQL parser or customizers changes only the callback's statements. This class orchestrates: the
 * claim and replays are {@link KeyClaims}, running and storing a callback {@link CallbackRunner},
 * lease mode {@link LeaseProtocol}.
 *
 * <p>By default every call runs in a transaction of its own, on a connection of its own, even when
 * the caller has a transaction open. Built with {@link Builder#joinCallerTransactions}, a call runs
 * inside the caller's open transaction ({@link JoinedTransactionRunner}); with
 * {@link Builder#refuseCallerTransactions}, it refuses to run while one is open.
 *
 * <p>Tracing ({@link Builder#tracing}): each {@code run} is an INTERNAL span
 * {@code IdempotentExecutor.run} ({@code runWithLease}: {@code IdempotentExecutor.runWithLease}), current
 * while the callback runs, with the outcome as {@code idempotency.outcome} ({@code first_run},
 * {@code replay}, {@code business_failure}, {@code in_progress}, {@code key_reused},
 * {@code transient_failure}, {@code invalid}, {@code error}); the key, the tenant and the result are
 * never attributes. Each outbox event stores the trace context current when it was published.
 *
 * <p>Thread-safe; build one per database and share it.
 */
public final class PostgresIdempotentExecutor implements IdempotentExecutor<PostgresTransaction> {
    private static final Logger log = LoggerFactory.getLogger(PostgresIdempotentExecutor.class);

    private final Jdbi jdbi;
    private final IdempotencyConfig config;
    private final KeyClaims claims;
    private final CallbackRunner callbacks;
    private final LeaseProtocol leases;
    /** Concurrent duplicates of a call in this process wait for its outcome here, not on the key row. */
    private final InFlightCalls inFlight = new InFlightCalls();
    /** The caller's transaction, when this executor joins or refuses it; else null. */
    private final CallerTransaction callerTransaction;
    /** Runs calls in the caller's transaction, in join mode; else null. */
    private final JoinedTransactionRunner joined;
    /**
     * False until the pooler probe ran, at the first call: building touches no database (it may be
     * down while the application starts), and the first call probes before any SQL or callback runs.
     */
    private volatile boolean poolerChecked;
    /** Set when the probe refused the pool; every call then fails with it, before any SQL. */
    private volatile PoolerBreaksPreparedStatementsException poolerRefusal;
    /**
     * True once the pooler probe saw that no pooler can run another client's statement under a name
     * pgjdbc gave ours (a direct connection, or a pooler tracking statements): the claim may then carry
     * the transaction's BEGIN ({@link ExecutorSql#BEGIN}), which pgjdbc names after 5 uses like the rest
     * of that statement. Not on the strength of prepareThreshold=0 alone: if the pool's connections
     * changed under a running executor, a named BEGIN mixed up by a pooler would leave the claim outside
     * any transaction (it fails then, SQLSTATE 25P01, and commits nothing, but does not name the fix).
     */
    private volatile boolean namedStatementsSeenSafe;
    private final AtomicBoolean poolerErrorLogged = new AtomicBoolean();
    private final Traces traces;
    private final Runnable afterOutboxCommit;

    private PostgresIdempotentExecutor(Builder builder) {
        this.jdbi = builder.jdbi;
        this.afterOutboxCommit = builder.afterOutboxCommit;
        this.config = builder.config;
        ExecutorSql sql = new ExecutorSql(config.schema());
        ResultCodec codec = new ResultCodec(config);
        this.traces = Traces.of(builder.tracing);
        this.claims = new KeyClaims(config, sql, codec);
        this.callbacks = new CallbackRunner(config, sql, codec, builder.afterOutboxCommit, traces);
        this.leases = new LeaseProtocol(jdbi, sql, codec, claims, callbacks);
        this.callerTransaction = builder.callerTransaction;
        this.joined = builder.joinCallerTransactions ? new JoinedTransactionRunner(callerTransaction, claims, callbacks) : null;
    }

    /** An executor on a pool (HikariCP in the examples), with a Jdbi of its own. */
    public static Builder builder(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource");
        return new Builder(Jdbi.create(dataSource).installPlugin(new PostgresPlugin()), true);
    }

    /**
     * An executor on an existing Jdbi, whose plugins, mappers and statement settings the callbacks'
     * statements then share; the executor's own statements do not go through it.
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(Objects.requireNonNull(jdbi, "jdbi"), false);
    }

    /** The configuration this executor was built with. */
    public IdempotencyConfig config() {
        return config;
    }

    /** The Jdbi this executor opens its transactions on, for {@link IdempotentBatchConsumer}. */
    Jdbi jdbi() {
        return jdbi;
    }

    /** Where outbox events read the trace context current at publish, for {@link IdempotentBatchConsumer}. */
    Traces traces() {
        return traces;
    }

    /**
     * Whether, once {@link #checkConnectionPooler()} has run, our COMMIT may travel with the statement
     * before it (as a call's does with its completion): where no pooler can hand our named statements to
     * another client. For {@link IdempotentBatchConsumer}.
     */
    boolean commitsWithCompletion() {
        return callbacks.commitsWithCompletion();
    }

    /** The listener told after each commit that wrote outbox events, for {@link IdempotentBatchConsumer}. */
    Runnable afterOutboxCommit() {
        return afterOutboxCommit;
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return execute(key, tenant, null, null, callback);
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, Class<T> resultType,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return execute(key, tenant, null, Objects.requireNonNull(resultType, "resultType"), callback);
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return execute(key, tenant, Objects.requireNonNull(fingerprint, "fingerprint"), null, callback);
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                                   Class<T> resultType,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return execute(key, tenant, Objects.requireNonNull(fingerprint, "fingerprint"),
                Objects.requireNonNull(resultType, "resultType"), callback);
    }

    /**
     * One transaction, the caller's if this executor joins it, else its own: claim the key, then
     * replay what it holds or run the callback and store its outcome.
     */
    private <T, X extends Exception> Outcome<T> execute(String key, String tenant, RequestFingerprint fingerprint,
                                                        Class<T> resultType,
                                                        IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return traced("IdempotentExecutor.run", () -> executeTraced(key, tenant, fingerprint, resultType, callback));
    }

    /** A call, in the span {@code name} when tracing is on, with its outcome recorded on it. */
    private <T, X extends Exception> Outcome<T> traced(String name, Call<T, X> call) throws X {
        if (traces == Traces.none()) {
            return call.run();
        }
        try (TracedSpan span = traces.startInternal(name)) {
            try {
                Outcome<T> outcome = call.run();
                span.outcome(outcome.replayed() ? SpanOutcomes.REPLAY : SpanOutcomes.FIRST_RUN);
                return outcome;
            } catch (Throwable e) {
                SpanOutcomes.threw(span, e);
                throw e;
            }
        }
    }

    /** One call of {@link #traced}. */
    @FunctionalInterface
    private interface Call<T, X extends Exception> {
        Outcome<T> run() throws X;
    }

    private <T, X extends Exception> Outcome<T> executeTraced(String key, String tenant, RequestFingerprint fingerprint,
                                                               Class<T> resultType,
                                                               IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        IdempotencyKeys.validate(key, tenant);
        Objects.requireNonNull(callback, "callback");
        byte[] digest = fingerprint == null ? null : fingerprint.digest();
        try {
            Optional<Connection> callers = callersTransaction();
            requirePoolerChecked();
            if (callers.isPresent()) {
                return joined.run(callers.get(), key, tenant, digest, resultType, callback);
            }
            try (InFlightCalls.Call call = inFlight.enter(tenant, key, digest)) {
                Optional<StoredKey> shared = call.awaitFirst(config.waitBudget());
                // What a duplicate waited for the first call counts against its wait on the key row.
                Duration budgetLeft = call.budgetLeft(config.waitBudget());
                if (shared.isPresent()) {
                    return claims.replay(shared.get(), key, tenant, digest, resultType);
                }
                try (Handle handle = jdbi.open()) {
                    return PgTransactions.inTransactionOpenedByWork(handle, claimMayBegin(), opens -> {
                        // Round trips: the claim (with the BEGIN and the savepoint), the callback's own, the completion
                        // with the commit; a replay: the claim, the read of the row it found, the commit.
                        Optional<StoredKey> stored = claims.claimThenSavepoint(handle, key, tenant, digest, budgetLeft, opens);
                        if (opens) {
                            PgTransactions.begun(handle);
                        }
                        if (stored.isPresent()) {
                            // What the claim found was committed by another call; this transaction wrote nothing.
                            call.found(stored.get());
                            PgTransactions.commit(handle);
                            return claims.replay(stored.get(), key, tenant, digest, resultType);
                        }
                        return callbacks.runAfterSavepoint(handle, key, tenant, resultType, callback, call.owner());
                    });
                }
            } catch (TimeoutException e) {
                throw claims.waitedPastBudget(key, tenant, null);
            }
        } catch (RuntimeException e) {
            throw translate(e, key, tenant);
        }
    }

    @Override
    public <S, T, X extends Exception> Outcome<T> runWithLease(LeaseRequest<T> request, ExternalStep<S, X> externalStep,
                                                               CompletionStep<PostgresTransaction, S, T, X> completion) throws X {
        return traced("IdempotentExecutor.runWithLease", () -> runWithLeaseTraced(request, externalStep, completion));
    }

    private <S, T, X extends Exception> Outcome<T> runWithLeaseTraced(LeaseRequest<T> request, ExternalStep<S, X> externalStep,
                                                                      CompletionStep<PostgresTransaction, S, T, X> completion)
            throws X {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(externalStep, "externalStep");
        Objects.requireNonNull(completion, "completion");
        Duration lease = request.lease();
        if (lease.toMillis() < 100 || lease.compareTo(config.maxLease()) > 0) {
            throw new IllegalArgumentException("lease must be between 100 ms and half the retention, "
                    + config.maxLease() + " for the retention of " + config.retention() + ", so that it runs out well "
                    + "before the key's retention ends (was " + lease + "). Use a shorter lease or a longer retention.");
        }
        String key = request.key();
        String tenant = request.tenant();
        byte[] digest = request.fingerprint().map(RequestFingerprint::digest).orElse(null);
        try {
            if (callerTransaction != null && callerTransaction.current().isPresent()) {
                throw new IllegalStateException("runWithLease() was called inside the caller's open transaction. Lease "
                        + "mode commits its claim before the external step and completes in a transaction of its own, "
                        + "so it cannot run inside yours; nothing ran. Call it outside the transaction.");
            }
            requirePoolerChecked();
            return leases.run(key, tenant, digest, lease.toMillis() / 1000.0, request.resultType(), externalStep, completion);
        } catch (RuntimeException e) {
            throw translate(e, key, tenant);
        }
    }

    /**
     * The connection of the transaction the caller has open, in join mode; empty when it has none or
     * this executor runs its own transactions regardless.
     *
     * @throws IllegalStateException in refuse mode, when the caller has a transaction open
     */
    private Optional<Connection> callersTransaction() {
        if (callerTransaction == null) {
            return Optional.empty();
        }
        if (joined != null) {
            return joined.callersConnection();
        }
        if (callerTransaction.current().isPresent()) {
            throw new IllegalStateException("run() was called inside a transaction the caller has open; this executor "
                    + "refuses to, because its own transaction on a second connection would neither commit nor roll "
                    + "back with yours, and could wait forever on rows yours holds. Nothing ran. Build the executor with "
                    + "joinCallerTransactions(...) to run inside your transaction, or call it outside the transaction.");
        }
        return Optional.empty();
    }

    /**
     * Checks the connection pooler in front of this executor's pool now rather than at the first
     * call, so that a pooler which would run named statements on other clients' backends stops the
     * application at startup. Call it outside any transaction: the check takes connections of its own
     * from the pool, which in join mode a burst of first calls, each holding one, could exhaust.
     *
     * @throws PoolerBreaksPreparedStatementsException when the pooler is refused; every call would be
     */
    public void checkConnectionPooler() {
        requirePoolerChecked();
    }

    /** Runs the pooler probe once; a database that cannot be reached leaves it for the next call. */
    private void requirePoolerChecked() {
        if (poolerChecked) {
            PoolerBreaksPreparedStatementsException refusal = poolerRefusal;
            if (refusal != null) {
                throw new PoolerBreaksPreparedStatementsException("The idempotent executor refused its pool's "
                        + "connection pooler when it first checked it; nothing ran.", refusal);
            }
            return;
        }
        synchronized (this) {
            if (!poolerChecked) {
                try {
                    PoolerProbe.Verdict verdict = PoolerProbe.check(jdbi, "the idempotent executor");
                    namedStatementsSeenSafe = verdict == PoolerProbe.Verdict.DIRECT || verdict == PoolerProbe.Verdict.TRACKED;
                    // Where no pooler can hand our named statements to another client, COMMIT may be one of them.
                    callbacks.commitWithCompletion(namedStatementsSeenSafe || verdict == PoolerProbe.Verdict.UNNAMED);
                } catch (PoolerBreaksPreparedStatementsException e) {
                    log.error("{}", e.getMessage());
                    poolerRefusal = e;
                    poolerChecked = true;
                    throw e;
                }
                poolerChecked = true;
            }
        }
        requirePoolerChecked();
    }

    /**
     * Whether a call's claim may open its transaction: only where its BEGIN may be a named statement,
     * and where Jdbi's own local transactions (whose begin only turns autocommit off) take it over.
     * Another handler (Spring's, one that sets an isolation level) begins before any statement.
     */
    private boolean claimMayBegin() {
        return namedStatementsSeenSafe && jdbi.getTransactionHandler() instanceof LocalTransactionHandler;
    }

    /** Names the fix for the errors a pooler mixing up named statements causes; else {@link DatabaseErrors#translate}. */
    private RuntimeException translate(RuntimeException e, String key, String tenant) {
        if (e instanceof PoolerBreaksPreparedStatementsException || !PoolerProbe.brokenByPooler(e)) {
            return DatabaseErrors.translate(e, key, tenant);
        }
        PoolerBreaksPreparedStatementsException broken = new PoolerBreaksPreparedStatementsException(
                "A connection pooler between the idempotent executor and PostgreSQL ran idempotency key '" + key
                        + "' of tenant '" + tenant + "' with a named prepared statement of another client (SQLSTATE "
                        + DatabaseErrors.sqlState(e) + "); the statement failed and its transaction was rolled back.", e);
        if (poolerErrorLogged.compareAndSet(false, true)) {
            log.error("{} (logged once per executor)", broken.getMessage());
        }
        return broken;
    }


    /** Builds a {@link PostgresIdempotentExecutor}; the configuration defaults to {@link IdempotencyConfig#defaults()}. */
    public static final class Builder {
        private final Jdbi jdbi;
        /** True for {@link #builder(DataSource)}: the executor's Jdbi has only the settings joined handles get too. */
        private final boolean ownJdbi;
        private IdempotencyConfig config = IdempotencyConfig.defaults();
        private Runnable afterOutboxCommit = () -> { };
        private CallerTransaction callerTransaction;
        private boolean joinCallerTransactions;
        private Tracing tracing = Tracing.auto();

        private Builder(Jdbi jdbi, boolean ownJdbi) {
            this.jdbi = jdbi;
            this.ownJdbi = ownJdbi;
        }

        /** The executor's settings (schema, retention, wait budget, size limits). */
        public Builder config(IdempotencyConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /**
         * Called after each commit that wrote outbox events, on the caller's thread; a relay in the
         * same JVM passes its wake-up here to publish without waiting for its next poll. Keep it cheap.
         */
        public Builder afterOutboxCommit(Runnable listener) {
            this.afterOutboxCommit = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Whether calls make spans and outbox events keep the trace context current at publish; default
         * {@link Tracing#auto()} (OpenTelemetry when its API is on the classpath, else nothing).
         */
        public Builder tracing(Tracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /**
         * Runs each call inside the transaction the caller has open on its thread, if any, so that
         * the key, the stored result and the outbox events commit or roll back with the caller's own
         * writes. No begin or commit of the executor's own then: it claims the key on the caller's
         * connection after a savepoint, runs the callback on a Jdbi handle over that connection, and
         * stores the outcome. A callback's exception rolls back to that savepoint (no key row, none of
         * the callback's writes) and propagates; a {@link dev.idempotency.core.BusinessFailure} is
         * stored and persists only if the caller commits; a replay writes nothing. The
         * {@link #afterOutboxCommit} listener runs after the caller's commit. Without a transaction
         * open, a call runs in its own as usual. {@code runWithLease()} refuses to run inside one.
         *
         * <p>Only for executors built with {@link #builder(DataSource)}, on the caller's database.
         * The caller's connections must not pass through a pooler that mixes up named prepared
         * statements (README, "Behind PgBouncer"): the first call checks the executor's own pool
         * for one, not the caller's.
         */
        public Builder joinCallerTransactions(CallerTransaction callerTransaction) {
            this.callerTransaction = Objects.requireNonNull(callerTransaction, "callerTransaction");
            this.joinCallerTransactions = true;
            return this;
        }

        /**
         * Refuses each call made inside a transaction the caller has open on its thread: it throws
         * {@link IllegalStateException}, and nothing runs. A call outside any runs as usual. Of this
         * and {@link #joinCallerTransactions}, the one called last applies.
         */
        public Builder refuseCallerTransactions(CallerTransaction callerTransaction) {
            this.callerTransaction = Objects.requireNonNull(callerTransaction, "callerTransaction");
            this.joinCallerTransactions = false;
            return this;
        }

        /**
         * Builds the executor without touching the database. Its first call checks the connection
         * pooler in front of PostgreSQL, if any, before any SQL of its own, and every call fails with
         * {@link PoolerBreaksPreparedStatementsException} when that pooler would mix up pgjdbc's
         * named prepared statements.
         */
        public PostgresIdempotentExecutor build() {
            if (joinCallerTransactions && !ownJdbi) {
                throw new IllegalStateException("joinCallerTransactions needs an executor built with builder(DataSource): "
                        + "a callback in the caller's transaction runs on a Jdbi handle over the caller's connection, "
                        + "which a Jdbi passed to builder(Jdbi) cannot open with its settings.");
            }
            return new PostgresIdempotentExecutor(this);
        }
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotentCallback;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.core.CompletionStep;
import dev.idempotency.core.ExternalStep;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.LeasedKey;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.jdbc.internal.PoolerProbe;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link IdempotentExecutor} on PostgreSQL: one transaction claims the key with
 * {@code INSERT ... ON CONFLICT DO NOTHING}, runs the callback on the same Jdbi handle, writes its
 * outbox events and its result, and commits. A concurrent duplicate waits on PostgreSQL's own row
 * lock for the first caller's transaction, bounded by the wait budget; a later one replays.
 *
 * <p>Transactions run at the isolation level the pool's connections have. At READ COMMITTED (the
 * default) a duplicate that waited on the first caller's row then reads its committed outcome. At
 * REPEATABLE READ or SERIALIZABLE its snapshot predates that commit, so PostgreSQL fails it with a
 * serialization failure, which reaches the caller as {@link TransientFailureException}; its retry
 * replays. Either way the callback runs once.
 *
 * <p>Thread-safe; build one per database and share it.
 */
public final class PostgresIdempotentExecutor implements IdempotentExecutor<PostgresTransaction> {
    private static final Logger log = LoggerFactory.getLogger(PostgresIdempotentExecutor.class);

    private static final String SAVEPOINT = "idempotent_callback";
    /** SQLSTATE lock_not_available: in the claim, lock_timeout fired while waiting on another caller's row. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    /** SQLSTATE serialization_failure, reported when a snapshot cannot see a key that changed under it. */
    private static final String SERIALIZATION_FAILURE = "40001";
    /** SQLSTATEs for JSON text PostgreSQL's jsonb refuses (e.g. a \u0000 escape). */
    private static final String UNTRANSLATABLE_CHARACTER = "22P05";
    private static final String INVALID_TEXT_REPRESENTATION = "22P02";
    /** A key that is purged or reclaimed between our statements sends us round again; this bounds it. */
    private static final int MAX_CLAIM_ROUNDS = 10;
    /** Failure code stored when a callback ended the executor's transaction itself. */
    static final String ENDED_BY_CALLBACK = "transaction_ended_by_callback";

    private final Jdbi jdbi;
    private final IdempotencyConfig config;
    private final SqlStatements sql;
    private final ResultCodec codec;
    private final String waitBudgetSetting;
    private final double retentionSeconds;
    private final Runnable afterOutboxCommit;
    /**
     * False until the pooler probe ran, at the first call: building touches no database (it may be
     * down while the application starts), and the first call probes before any SQL or callback runs.
     */
    private volatile boolean poolerChecked;
    /** Set when the probe refused the pool; every call then fails with it, before any SQL. */
    private volatile PoolerBreaksPreparedStatementsException poolerRefusal;
    private final AtomicBoolean poolerErrorLogged = new AtomicBoolean();

    private PostgresIdempotentExecutor(Builder builder) {
        this.jdbi = builder.jdbi;
        this.config = builder.config;
        this.sql = new SqlStatements(config.schema());
        this.codec = new ResultCodec(config);
        // lock_timeout = 0 would mean "wait forever"; a zero budget means "do not wait".
        this.waitBudgetSetting = Math.max(1, config.waitBudget().toMillis()) + "ms";
        this.retentionSeconds = config.retention().toMillis() / 1000.0;
        this.afterOutboxCommit = builder.afterOutboxCommit;
    }

    /** An executor on a pool (HikariCP in the examples), with a Jdbi of its own. */
    public static Builder builder(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource");
        return new Builder(Jdbi.create(dataSource).installPlugin(new PostgresPlugin()));
    }

    /** An executor on an existing Jdbi, whose plugins and mappers callbacks then share. */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(Objects.requireNonNull(jdbi, "jdbi"));
    }

    /** The configuration this executor was built with. */
    public IdempotencyConfig config() {
        return config;
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

    private <T, X extends Exception> Outcome<T> execute(String key, String tenant, RequestFingerprint fingerprint,
                                                        Class<T> resultType,
                                                        IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        IdempotencyKeys.validate(key, tenant);
        Objects.requireNonNull(callback, "callback");
        byte[] digest = fingerprint == null ? null : fingerprint.digest();
        try {
            requirePoolerChecked();
            try (Handle handle = jdbi.open()) {
                return inTransaction(handle, key, tenant, digest, resultType, callback);
            }
        } catch (RuntimeException e) {
            throw translate(e, key, tenant);
        }
    }

    private <T, X extends Exception> Outcome<T> inTransaction(Handle handle, String key, String tenant, byte[] digest,
                                                              Class<T> resultType,
                                                              IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        boolean ended = false;
        handle.begin();
        try {
            Optional<StoredKey> stored = claim(handle, key, tenant, digest, null, null);
            if (stored.isPresent()) {
                commit(handle);
                ended = true;
                return replay(stored.get(), key, tenant, digest, resultType);
            }
            Outcome<T> outcome = runCallback(handle, key, tenant, resultType, callback);
            ended = true;
            return outcome;
        } finally {
            if (!ended) {
                rollbackQuietly(handle);
            }
        }
    }

    /**
     * A failure of the claim's own statements, as the caller should see it. Only there is a lock
     * timeout a wait on the key itself (409); the callback's lock timeouts are transient (503).
     */
    private RuntimeException claimFailure(RuntimeException e, String key, String tenant) {
        if (LOCK_NOT_AVAILABLE.equals(DatabaseErrors.sqlState(e))) {
            return new KeyInProgressException("Idempotency key '" + key + "' of tenant '" + tenant
                    + "' is being processed by another request that did not finish within the wait budget of "
                    + config.waitBudget().toMillis() + " ms. Nothing ran; retry later (HTTP 409).", e);
        }
        return DatabaseErrors.schemaMissing(e, config.schema(), "IdempotencyConfig.schema");
    }

    @Override
    public <S, T, X extends Exception> Outcome<T> runWithLease(String key, String tenant, RequestFingerprint fingerprint,
                                                               Duration lease, Class<T> resultType,
                                                               ExternalStep<S, X> externalStep,
                                                               CompletionStep<PostgresTransaction, S, T, X> completion) throws X {
        IdempotencyKeys.validate(key, tenant);
        Objects.requireNonNull(lease, "lease");
        if (lease.toMillis() < 100 || lease.compareTo(config.maxLease()) > 0) {
            throw new IllegalArgumentException("lease must be between 100 ms and half the retention, "
                    + config.maxLease() + " for the retention of " + config.retention() + ", so that it runs out well "
                    + "before the key's retention ends (was " + lease + "). Use a shorter lease or a longer retention.");
        }
        Objects.requireNonNull(resultType, "resultType");
        Objects.requireNonNull(externalStep, "externalStep");
        Objects.requireNonNull(completion, "completion");
        byte[] digest = fingerprint == null ? null : fingerprint.digest();
        // Unique per holder is all a fencing token must be; a random one needs no sequence in the schema.
        long token = ThreadLocalRandom.current().nextLong();

        try {
            requirePoolerChecked();
            return withLease(key, tenant, digest, token, lease, resultType, externalStep, completion);
        } catch (RuntimeException e) {
            throw translate(e, key, tenant);
        }
    }

    private <S, T, X extends Exception> Outcome<T> withLease(String key, String tenant, byte[] digest, long token,
                                                             Duration lease, Class<T> resultType,
                                                             ExternalStep<S, X> externalStep,
                                                             CompletionStep<PostgresTransaction, S, T, X> completion) throws X {
        LeaseClaim claim = claimLease(key, tenant, digest, token, lease.toMillis() / 1000.0);
        if (claim.stored() != null) {
            return replay(claim.stored(), key, tenant, digest, resultType);
        }
        S external;
        try {
            external = externalStep.run(new LeasedKey(key, tenant, token, claim.expiresAt()));
        } catch (BusinessFailure failure) {
            storeLeasedFailure(key, tenant, token, failure);
            throw failure;
        } catch (RuntimeException | Error e) {
            releaseLease(key, tenant, token);
            throw e;
        } catch (Exception e) {
            releaseLease(key, tenant, token);
            throw e;
        }
        return completeLease(key, tenant, token, resultType, tx -> completion.complete(tx, external));
    }

    /** What lease mode's claim found: a committed outcome to replay, or the lease it took. */
    private record LeaseClaim(StoredKey stored, Instant expiresAt) {
    }

    private LeaseClaim claimLease(String key, String tenant, byte[] digest, long token, double leaseSeconds) {
        try (Handle handle = jdbi.open()) {
            boolean ended = false;
            handle.begin();
            try {
                Optional<StoredKey> stored = claim(handle, key, tenant, digest, token, leaseSeconds);
                Instant expiresAt = stored.isPresent() ? null : handle.createQuery(sql.findLeaseExpiry)
                        .bind("tenant", tenant).bind("key", key)
                        .mapTo(Instant.class).one();
                commit(handle);
                ended = true;
                return new LeaseClaim(stored.orElse(null), expiresAt);
            } finally {
                if (!ended) {
                    rollbackQuietly(handle);
                }
            }
        }
    }

    private <T, X extends Exception> Outcome<T> completeLease(String key, String tenant, long token, Class<T> resultType,
                                                              IdempotentCallback<PostgresTransaction, T, X> completion) throws X {
        try (Handle handle = jdbi.open()) {
            boolean ended = false;
            handle.begin();
            try {
                int confirmed = handle.createUpdate(sql.confirmLease)
                        .bind("tenant", tenant).bind("key", key).bind("leaseToken", token)
                        .execute();
                if (confirmed == 0) {
                    throw new LeaseLostException("The lease on idempotency key '" + key + "' of tenant '" + tenant
                            + "' ran out before completion; nothing was written. The external step did run, so the key "
                            + "is kept as an unknown outcome, never reclaimed nor purged: retries get KeyInProgressException "
                            + "until the sweeper records it as failure lease_expired, then that failure. Look the key up in "
                            + "the external system to reconcile it with UnknownOutcomes, and use a longer lease.");
                }
                Outcome<T> outcome = runCallback(handle, key, tenant, resultType, completion);
                ended = true;
                return outcome;
            } finally {
                if (!ended) {
                    // The external step ran, so the key must not be freed: it stays processing until its
                    // lease runs out and the sweeper records the outcome as unknown.
                    rollbackQuietly(handle);
                }
            }
        }
    }

    private void storeLeasedFailure(String key, String tenant, long token, BusinessFailure failure) {
        int stored;
        try {
            stored = jdbi.withHandle(h -> h.createUpdate(sql.failLeasedKey)
                    .bind("tenant", tenant).bind("key", key).bind("leaseToken", token)
                    .bind("failure", codec.encodeFailure(failure))
                    .execute());
        } catch (RuntimeException e) {
            throw RedactedErrors.redact(e); // it bound the failure's message and details
        }
        if (stored == 0) {
            log.warn("the lease on idempotency key {} of tenant {} was lost before its business failure {} could be stored",
                    key, tenant, failure.code());
        }
    }

    private void releaseLease(String key, String tenant, long token) {
        try {
            jdbi.useHandle(h -> h.createUpdate(sql.releaseLease)
                    .bind("tenant", tenant).bind("key", key).bind("leaseToken", token)
                    .execute());
        } catch (RuntimeException e) {
            log.warn("could not free idempotency key {} of tenant {} after its external step failed; it stays in progress "
                    + "until its lease runs out", key, tenant, e);
        }
    }

    /**
     * Claims the key for this transaction (empty result), or returns what a committed row holds.
     * With a lease token the claimed row carries a lease of {@code leaseSeconds}; without, none.
     * Failures of these statements are translated here, and only here, into "in progress" (a wait
     * on the key past the budget) and "schema not migrated".
     */
    private Optional<StoredKey> claim(Handle handle, String key, String tenant, byte[] digest,
                                      Long leaseToken, Double leaseSeconds) {
        try {
            return claimRounds(handle, key, tenant, digest, leaseToken, leaseSeconds);
        } catch (RuntimeException e) {
            throw claimFailure(e, key, tenant);
        }
    }

    private Optional<StoredKey> claimRounds(Handle handle, String key, String tenant, byte[] digest,
                                            Long leaseToken, Double leaseSeconds) {
        for (int round = 0; round < MAX_CLAIM_ROUNDS; round++) {
            if (round > 0) {
                // The last round's insert bounded lock_timeout and did not restore it; save the real one again.
                restoreLockTimeout(handle);
            }
            boolean inserted;
            try (JdbcStatement.Call insert = sql.claimKey.on(handle.getConnection())) {
                inserted = insert.text("tenant", tenant).text("key", key).bytes("fingerprint", digest)
                        .bigint("leaseToken", leaseToken).number("leaseSeconds", leaseSeconds)
                        .number("retentionSeconds", retentionSeconds).text("waitBudget", waitBudgetSetting)
                        .returnsRow();
            } catch (SQLException e) {
                throw JdbcStatement.failure(e);
            }
            if (inserted) {
                return Optional.empty();
            }
            Optional<StoredKey> stored = findKey(handle, key, tenant);
            if (stored.isPresent() && !stored.get().reclaimable()) {
                return stored;
            }
            if (stored.isPresent()) {
                int reclaimed = handle.createUpdate(sql.reclaimExpiredKey)
                        .bind("tenant", tenant).bind("key", key).bind("fingerprint", digest)
                        .bind("leaseToken", leaseToken).bind("leaseSeconds", leaseSeconds)
                        .bind("retentionSeconds", retentionSeconds)
                        .execute();
                if (reclaimed == 1) {
                    log.debug("reclaimed expired idempotency key {} of tenant {}", key, tenant);
                    restoreLockTimeout(handle);
                    return Optional.empty();
                }
            }
            // Purged, or reclaimed by another caller, between our statements: look again. A
            // transaction-wide snapshot (REPEATABLE READ, SERIALIZABLE) would see the same again.
            requireStatementSnapshots(handle, key, tenant);
        }
        throw new KeyInProgressException("Idempotency key '" + key + "' of tenant '" + tenant
                + "' changed state " + MAX_CLAIM_ROUNDS + " times while being claimed; retry later (HTTP 409).");
    }

    private static void restoreLockTimeout(Handle handle) {
        handle.createQuery(SqlStatements.RESTORE_LOCK_TIMEOUT).mapTo(String.class).one();
    }

    /**
     * Goes on only at READ COMMITTED, where the next statement sees what committed meanwhile.
     * PostgreSQL itself raises a serialization failure in nearly every such case at the higher
     * levels; this covers the rest with the same answer, rather than claiming round after round.
     */
    private static void requireStatementSnapshots(Handle handle, String key, String tenant) {
        String isolation = handle.createQuery(SqlStatements.CURRENT_ISOLATION).mapTo(String.class).one();
        if (!"read committed".equals(isolation)) {
            throw new TransientFailureException("Idempotency key '" + key + "' of tenant '" + tenant + "' changed after this "
                    + "transaction's snapshot was taken (isolation level " + isolation + "). Nothing ran; retry with the same "
                    + "key: it replays what committed (HTTP 503).", SERIALIZATION_FAILURE, null);
        }
    }

    private Optional<StoredKey> findKey(Handle handle, String key, String tenant) {
        return handle.createQuery(sql.findKey)
                .bind("tenant", tenant).bind("key", key)
                .map((rs, ctx) -> new StoredKey(rs.getString("status"), rs.getBytes("request_fingerprint"),
                        rs.getString("result"), rs.getString("result_type"), rs.getString("failure"),
                        rs.getBoolean("reclaimable"), rs.getBoolean("lease_ran_out")))
                .findOne();
    }

    private <T> Outcome<T> replay(StoredKey stored, String key, String tenant, byte[] digest, Class<T> resultType) {
        if (!Arrays.equals(stored.fingerprint(), digest)) {
            throw new KeyReusedException("Idempotency key '" + key + "' of tenant '" + tenant
                    + "' was first used for a different request. Nothing ran; use a new key for a new request (HTTP 422).");
        }
        switch (stored.status()) {
            case StoredKey.COMPLETED: {
                log.debug("replaying idempotency key {} of tenant {}", key, tenant);
                @SuppressWarnings("unchecked")
                T result = (T) codec.decode(stored.resultJson(), stored.resultType(), resultType);
                return Outcome.replay(result);
            }
            case StoredKey.FAILED:
                log.debug("replaying the stored failure of idempotency key {} of tenant {}", key, tenant);
                throw codec.decodeFailure(stored.failureJson());
            default:
                if (stored.leaseRanOut()) {
                    throw new KeyInProgressException("The lease on idempotency key '" + key + "' of tenant '" + tenant
                            + "' ran out before its work completed, so its outcome is unknown. Nothing ran; the sweeper "
                            + "will record it as failure lease_expired for an operator to resolve (HTTP 409).");
                }
                throw new KeyInProgressException("Idempotency key '" + key + "' of tenant '" + tenant
                        + "' is held by a lease on work still in progress. Nothing ran; retry later (HTTP 409).");
        }
    }

    private <T, X extends Exception> Outcome<T> runCallback(Handle handle, String key, String tenant, Class<T> resultType,
                                                            IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        TransactionOutbox outbox = new TransactionOutbox(tenant, config.objectMapper(), config.maxOutboxPayloadBytes());
        handle.savepoint(SAVEPOINT);
        T result;
        try {
            result = callback.run(new CallbackTransaction(key, tenant, handle, outbox));
        } catch (BusinessFailure failure) {
            requireOpenTransaction(handle, key, tenant);
            handle.rollbackToSavepoint(SAVEPOINT);
            outbox.discard();
            try {
                handle.createUpdate(sql.failKey)
                        .bind("tenant", tenant).bind("key", key).bind("failure", codec.encodeFailure(failure))
                        .execute();
            } catch (RuntimeException e) {
                throw RedactedErrors.redact(e); // it bound the failure's message and details
            }
            commit(handle);
            log.debug("stored business failure {} for idempotency key {} of tenant {}", failure.code(), key, tenant);
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
        JdbcStatement statement = outbox.size() == 0 ? sql.completeKey : sql.completeKeyWithEvents;
        try (JdbcStatement.Call completion = statement.on(handle.getConnection())) {
            completion.text("tenant", tenant).text("key", key)
                    .text("result", stored.json()).text("resultType", stored.typeName());
            if (outbox.size() > 0) {
                outbox.bindEvents(completion);
            }
            if (completion.update() != 1) {
                // Only a statement that ran other SQL than ours (a pooler mixing up named statements) gets here.
                throw new IllegalStateException("The key row that idempotency key '" + key + "' of tenant '" + tenant
                        + "' claimed was not in its transaction when its result was stored; nothing was committed.");
            }
        } catch (SQLException e) {
            String state = e.getSQLState();
            if (UNTRANSLATABLE_CHARACTER.equals(state) || INVALID_TEXT_REPRESENTATION.equals(state)) {
                throw new ResultNotStorableException("PostgreSQL refused the result or an outbox payload as jsonb: "
                        + DatabaseErrors.rootMessage(e) + ". Nothing was stored (jsonb cannot hold \\u0000 in strings).",
                        JdbcStatement.failure(e));
            }
            throw JdbcStatement.failure(e);
        }
        commit(handle);
        if (outbox.size() > 0) {
            signalOutboxCommit();
        }
        return Outcome.firstRun(handedOut);
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
            marked = handle.createUpdate(sql.failAbandonedKey)
                    .bind("tenant", tenant).bind("key", key).bind("failure", codec.encodeFailure(unknown))
                    .execute();
        }
        throw new IllegalStateException("The callback committed, rolled back or closed the executor's transaction. "
                + (marked == 1 ? "Its writes were committed without a result; the key is stored as failed with code "
                        + ENDED_BY_CALLBACK + "." : "Nothing was stored.")
                + " Let the executor end the transaction.");
    }

    /** Commits with an unnamed COMMIT, and only a transaction PostgreSQL has not aborted ({@link PgTransactions}). */
    private static void commit(Handle handle) {
        PgTransactions.commit(handle);
    }

    private static boolean connectionClosed(Handle handle) {
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
                    PoolerProbe.check(jdbi, "the idempotent executor");
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

    private static void rollbackQuietly(Handle handle) {
        if (handle.isClosed()) {
            return;
        }
        try {
            PgTransactions.rollback(handle);
        } catch (RuntimeException e) {
            log.debug("rollback after a failed idempotent call failed too", e);
        }
    }


    /** Builds a {@link PostgresIdempotentExecutor}; the configuration defaults to {@link IdempotencyConfig#defaults()}. */
    public static final class Builder {
        private final Jdbi jdbi;
        private IdempotencyConfig config = IdempotencyConfig.defaults();
        private Runnable afterOutboxCommit = () -> { };

        private Builder(Jdbi jdbi) {
            this.jdbi = jdbi;
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
         * Builds the executor without touching the database. Its first call checks the connection
         * pooler in front of PostgreSQL, if any, before any SQL of its own, and every call fails with
         * {@link PoolerBreaksPreparedStatementsException} when that pooler would mix up pgjdbc's
         * named prepared statements.
         */
        public PostgresIdempotentExecutor build() {
            return new PostgresIdempotentExecutor(this);
        }
    }
}

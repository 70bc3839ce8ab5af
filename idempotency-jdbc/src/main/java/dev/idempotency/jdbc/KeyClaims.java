package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Claims a key inside the caller's transaction, and turns what a committed key row holds into the
 * caller's outcome: a replayed result, a replayed failure, "in progress" or "key reused". Shared by
 * the executor's one-transaction path and lease mode's claim.
 */
final class KeyClaims {
    /** The executor's logger, so that users keep one category to configure. */
    private static final Logger log = LoggerFactory.getLogger(PostgresIdempotentExecutor.class);

    /** SQLSTATE lock_not_available: in the claim, lock_timeout fired while waiting on another caller's row. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    /** SQLSTATE serialization_failure, reported when a snapshot cannot see a key that changed under it. */
    private static final String SERIALIZATION_FAILURE = "40001";
    /** A key that is purged or reclaimed between our statements sends us round again; this bounds it. */
    private static final int MAX_CLAIM_ROUNDS = 10;

    private final IdempotencyConfig config;
    private final ExecutorSql sql;
    private final ResultCodec codec;
    private final long waitBudgetMillis;
    private final String waitBudgetSetting;
    private final double retentionSeconds;

    KeyClaims(IdempotencyConfig config, ExecutorSql sql, ResultCodec codec) {
        this.config = config;
        this.sql = sql;
        this.codec = codec;
        this.waitBudgetMillis = lockTimeoutMillis(config.waitBudget());
        this.waitBudgetSetting = waitBudgetMillis + "ms";
        this.retentionSeconds = config.retention().toMillis() / 1000.0;
    }

    /**
     * {@code budget} in whole milliseconds rounded up, at least 1: lock_timeout = 0 would mean "wait
     * forever"; a zero budget means "do not wait".
     */
    private static long lockTimeoutMillis(Duration budget) {
        return Math.max(1, (budget.toNanos() + 999_999) / 1_000_000);
    }

    /** {@code budgetLeft} as a lock_timeout setting; the one built once when nothing was waited in process. */
    private String lockTimeout(Duration budgetLeft) {
        long millis = lockTimeoutMillis(budgetLeft);
        return millis == waitBudgetMillis ? waitBudgetSetting : millis + "ms";
    }

    /**
     * Claims the key for this transaction (empty result), or returns what a committed row holds.
     * With a lease token the claimed row carries a lease of {@code leaseSeconds}; without, none.
     * Failures of these statements are translated here, and only here, into "in progress" (a wait
     * on the key past the budget) and "schema not migrated".
     */
    Optional<StoredKey> claim(Handle handle, String key, String tenant, byte[] digest,
                              Long leaseToken, Double leaseSeconds) {
        try {
            return claimRounds(handle.getConnection(), key, tenant, digest, leaseToken, leaseSeconds, sql.claimKey,
                    waitBudgetSetting);
        } catch (RuntimeException e) {
            throw claimFailure(e, key, tenant);
        }
    }

    /**
     * {@link #claim} without a lease, which on an empty result has also taken the callback's savepoint
     * ({@link ExecutorSql#CALLBACK_SAVEPOINT}) after the claimed row. The savepoint travels with the
     * insert ({@link ExecutorSql#claimForCallback}), so it costs no round trip of its own. The wait on
     * the key is bounded by {@code budgetLeft}: the wait budget, less what a duplicate already waited
     * for a first call in this process ({@link InFlightCalls}).
     * With {@code begins}, the insert also opens the transaction ({@link ExecutorSql#beginThenClaimForCallback}).
     */
    Optional<StoredKey> claimThenSavepoint(Handle handle, String key, String tenant, byte[] digest, Duration budgetLeft,
                                           boolean begins) {
        try {
            return claimRounds(handle.getConnection(), key, tenant, digest, null, null,
                    begins ? sql.beginThenClaimForCallback : sql.claimForCallback, lockTimeout(budgetLeft));
        } catch (RuntimeException e) {
            throw claimFailure(e, key, tenant);
        }
    }

    /**
     * {@link #claimThenSavepoint} in the caller's transaction, after taking the claim's own savepoint
     * there ({@link ExecutorSql#CLAIM_SAVEPOINT}), in the same flush
     * ({@link ExecutorSql#claimInCallersTransaction}). Whatever it returns or throws, the claim's
     * savepoint has been taken, unless the connection failed; the caller undoes or releases it.
     */
    Optional<StoredKey> claimInCallersTransaction(Handle handle, String key, String tenant, byte[] digest) {
        try {
            return claimRounds(handle.getConnection(), key, tenant, digest, null, null, sql.claimInCallersTransaction,
                    waitBudgetSetting);
        } catch (RuntimeException e) {
            throw claimFailure(e, key, tenant);
        }
    }

    /**
     * A failure of the claim's own statements, as the caller should see it. Only there is a lock
     * timeout a wait on the key itself (409); the callback's lock timeouts are transient (503).
     */
    private RuntimeException claimFailure(RuntimeException e, String key, String tenant) {
        if (LOCK_NOT_AVAILABLE.equals(DatabaseErrors.sqlState(e))) {
            return waitedPastBudget(key, tenant, e);
        }
        return DatabaseErrors.schemaMissing(e, config.schema(), "IdempotencyConfig.schema");
    }

    /** "In progress": a wait on the key, in PostgreSQL or for a first call in this process, outlasted the budget. */
    KeyInProgressException waitedPastBudget(String key, String tenant, Throwable cause) {
        return new KeyInProgressException("Idempotency key '" + key + "' of tenant '" + tenant
                + "' is being processed by another request that did not finish within the wait budget of "
                + config.waitBudget().toMillis() + " ms. Nothing ran; retry later (HTTP 409).", cause);
    }

    /**
     * Claims in rounds; {@code firstRound} is {@link ExecutorSql#claimKey} or one of the statements
     * that send it with the callback's savepoint. Later rounds send
     * {@link ExecutorSql#claimForCallback} in the latter case: a claim savepoint is taken once.
     */
    private Optional<StoredKey> claimRounds(Connection connection, String key, String tenant, byte[] digest,
                                            Long leaseToken, Double leaseSeconds, JdbcStatement firstRound,
                                            String waitBudget) {
        boolean savepoint = firstRound != sql.claimKey;
        for (int round = 0; round < MAX_CLAIM_ROUNDS; round++) {
            if (round > 0) {
                // The last round's insert bounded lock_timeout and did not restore it; save the real one again.
                restoreLockTimeout(connection);
            }
            boolean inserted;
            JdbcStatement claim = round == 0 ? firstRound : savepoint ? sql.claimForCallback : sql.claimKey;
            try (JdbcStatement.Call insert = claim.on(connection)) {
                insert.text("tenant", tenant).text("key", key).bytes("fingerprint", digest)
                        .bigint("leaseToken", leaseToken).number("leaseSeconds", leaseSeconds)
                        .number("retentionSeconds", retentionSeconds).text("waitBudget", waitBudget);
                try (ResultSet claimed = insert.executeAll()) {
                    inserted = claimed.next();
                }
            } catch (SQLException e) {
                throw JdbcStatement.failure(e);
            }
            if (inserted) {
                return Optional.empty();
            }
            Optional<StoredKey> stored = findKey(connection, key, tenant);
            if (stored.isPresent() && !stored.get().reclaimable()) {
                return stored;
            }
            if (stored.isPresent()) {
                int reclaimed = sql.reclaimExpiredKey.update(connection, call -> call
                        .text("tenant", tenant).text("key", key).bytes("fingerprint", digest)
                        .bigint("leaseToken", leaseToken).number("leaseSeconds", leaseSeconds)
                        .number("retentionSeconds", retentionSeconds));
                if (reclaimed == 1) {
                    log.debug("reclaimed expired idempotency key {} of tenant {}", key, tenant);
                    restoreLockTimeout(connection);
                    if (savepoint) {
                        // The one sent with the insert sits before this update: a rollback to it would undo the reclaim.
                        JdbcStatement.executeUnnamed(connection, ExecutorSql.CALLBACK_SAVEPOINT);
                    }
                    return Optional.empty();
                }
            }
            // Purged, or reclaimed by another caller, between our statements: look again. A
            // transaction-wide snapshot (REPEATABLE READ, SERIALIZABLE) would see the same again.
            requireStatementSnapshots(connection, key, tenant);
        }
        throw new KeyInProgressException("Idempotency key '" + key + "' of tenant '" + tenant
                + "' changed state " + MAX_CLAIM_ROUNDS + " times while being claimed; retry later (HTTP 409).");
    }

    private static void restoreLockTimeout(Connection connection) {
        ExecutorSql.RESTORE_LOCK_TIMEOUT.queryFirst(connection, call -> { }, row -> row.getString(1));
    }

    /**
     * Goes on only at READ COMMITTED, where the next statement sees what committed meanwhile.
     * PostgreSQL itself raises a serialization failure in nearly every such case at the higher
     * levels; this covers the rest with the same answer, rather than claiming round after round.
     */
    private static void requireStatementSnapshots(Connection connection, String key, String tenant) {
        String isolation = ExecutorSql.CURRENT_ISOLATION.queryFirst(connection, call -> { }, row -> row.getString(1))
                .orElse("unknown");
        if (!"read committed".equals(isolation)) {
            throw new TransientFailureException("Idempotency key '" + key + "' of tenant '" + tenant + "' changed after this "
                    + "transaction's snapshot was taken (isolation level " + isolation + "). Nothing ran; retry with the same "
                    + "key: it replays what committed (HTTP 503).", SERIALIZATION_FAILURE, null);
        }
    }

    private Optional<StoredKey> findKey(Connection connection, String key, String tenant) {
        return sql.findKey.queryFirst(connection, call -> call.text("tenant", tenant).text("key", key), KeyClaims::storedKey);
    }

    private static StoredKey storedKey(ResultSet row) throws SQLException {
        return new StoredKey(row.getString("status"), row.getBytes("request_fingerprint"),
                row.getString("result"), row.getString("result_type"), row.getString("failure"),
                row.getBoolean("reclaimable"), row.getBoolean("lease_ran_out"));
    }

    /** What a caller gets for a committed key: its result, or its failure, "in progress" or "key reused" thrown. */
    <T> Outcome<T> replay(StoredKey stored, String key, String tenant, byte[] digest, Class<T> resultType) {
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
}

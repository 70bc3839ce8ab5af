package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.CompletionStep;
import dev.idempotency.core.ExternalStep;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.LeasedKey;
import dev.idempotency.core.Outcome;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease mode's protocol, for work with effects outside the database: (1) claim the key with a
 * lease and a fencing token in a short committed transaction; (2) run the external step with no
 * transaction open; (3) in a second transaction, confirm the lease still holds and run the
 * completion. An external step that fails with a business failure stores it (if the lease is still
 * ours); one that fails otherwise frees the key for a retry. Once the external step ran, the key is
 * never freed: a completion that fails leaves it processing until the sweeper records the outcome
 * as unknown.
 */
final class LeaseProtocol {
    /** The executor's logger, so that users keep one category to configure. */
    private static final Logger log = LoggerFactory.getLogger(PostgresIdempotentExecutor.class);

    private final Jdbi jdbi;
    private final ExecutorSql sql;
    private final ResultCodec codec;
    private final KeyClaims claims;
    private final CallbackRunner callbacks;

    LeaseProtocol(Jdbi jdbi, ExecutorSql sql, ResultCodec codec, KeyClaims claims, CallbackRunner callbacks) {
        this.jdbi = jdbi;
        this.sql = sql;
        this.codec = codec;
        this.claims = claims;
        this.callbacks = callbacks;
    }

    /** Runs the three steps for a key already validated; {@code leaseSeconds} within the configured bounds. */
    <S, T, X extends Exception> Outcome<T> run(String key, String tenant, byte[] digest, double leaseSeconds,
                                               Class<T> resultType, ExternalStep<S, X> externalStep,
                                               CompletionStep<PostgresTransaction, S, T, X> completion) throws X {
        // Unique per holder is all a fencing token must be; a random one needs no sequence in the schema.
        long token = ThreadLocalRandom.current().nextLong();
        Claim claim = claim(key, tenant, digest, token, leaseSeconds);
        if (claim.stored() != null) {
            return claims.replay(claim.stored(), key, tenant, digest, resultType);
        }
        S external;
        try {
            external = externalStep.run(new LeasedKey(key, tenant, token, claim.expiresAt()));
        } catch (BusinessFailure failure) {
            storeFailure(key, tenant, token, failure);
            throw failure;
        } catch (Exception | Error e) {
            release(key, tenant, token);
            throw e;
        }
        return complete(key, tenant, token, resultType, completion, external);
    }

    /** What the claim found: a committed outcome to replay, or the lease it took and when it runs out. */
    private record Claim(StoredKey stored, Instant expiresAt) {
    }

    /** Step 1: claims the key with a lease and commits, so that the lease outlives this transaction. */
    private Claim claim(String key, String tenant, byte[] digest, long token, double leaseSeconds) {
        try (Handle handle = jdbi.open()) {
            return PgTransactions.inTransaction(handle, () -> {
                Optional<StoredKey> stored = claims.claim(handle, key, tenant, digest, token, leaseSeconds);
                Instant expiresAt = stored.isPresent() ? null : sql.findLeaseExpiry.queryFirst(handle.getConnection(),
                        call -> call.text("tenant", tenant).text("key", key),
                        row -> row.getObject(1, OffsetDateTime.class).toInstant()).orElseThrow();
                PgTransactions.commit(handle);
                return new Claim(stored.orElse(null), expiresAt);
            });
        }
    }

    /** Step 3: confirms the lease and runs the completion in one transaction, or throws {@link LeaseLostException}. */
    private <S, T, X extends Exception> Outcome<T> complete(String key, String tenant, long token, Class<T> resultType,
                                                            CompletionStep<PostgresTransaction, S, T, X> completion,
                                                            S external) throws X {
        try (Handle handle = jdbi.open()) {
            // On failure the transaction rolls back but the key is not freed: the external step ran, so the
            // key stays processing until its lease runs out and the sweeper records the outcome as unknown.
            return PgTransactions.inTransaction(handle, () -> {
                int confirmed = sql.confirmLease.update(handle.getConnection(), call -> call
                        .text("tenant", tenant).text("key", key).bigint("leaseToken", token));
                if (confirmed == 0) {
                    throw new LeaseLostException("The lease on idempotency key '" + key + "' of tenant '" + tenant
                            + "' ran out before completion; nothing was written. The external step did run, so the key "
                            + "is kept as an unknown outcome, never reclaimed nor purged: retries get KeyInProgressException "
                            + "until the sweeper records it as failure lease_expired, then that failure. Look the key up in "
                            + "the external system to reconcile it with UnknownOutcomes, and use a longer lease.");
                }
                return callbacks.run(handle, key, tenant, resultType, tx -> completion.complete(tx, external));
            });
        }
    }

    /** The external step's business failure, stored if the lease is still ours. */
    private void storeFailure(String key, String tenant, long token, BusinessFailure failure) {
        String encoded = codec.encodeFailure(failure);
        int stored;
        try (Handle handle = jdbi.open()) {
            // JdbcStatement's failures carry no bound values, so the failure's message and details stay out of them.
            stored = sql.failLeasedKey.update(handle.getConnection(), call -> call.text("tenant", tenant).text("key", key)
                    .bigint("leaseToken", token).text("failure", encoded));
        }
        if (stored == 0) {
            log.warn("the lease on idempotency key {} of tenant {} was lost before its business failure {} could be stored",
                    key, tenant, failure.code());
        }
    }

    /** The external step failed before any effect was known: frees the key so that a retry runs it again. */
    private void release(String key, String tenant, long token) {
        try (Handle handle = jdbi.open()) {
            sql.releaseLease.update(handle.getConnection(), call -> call.text("tenant", tenant).text("key", key)
                    .bigint("leaseToken", token));
        } catch (RuntimeException e) {
            log.warn("could not free idempotency key {} of tenant {} after its external step failed; it stays in progress "
                    + "until its lease runs out", key, tenant, e);
        }
    }
}

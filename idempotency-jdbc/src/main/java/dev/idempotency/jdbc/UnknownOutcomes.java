package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotencyKeys;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

/**
 * The operator's view of lease-mode keys whose outcome is unknown: the holder died or overran its
 * lease, the sweeper stored them as failed with code {@code lease_expired}, and every retry replays
 * that failure until someone decides. Reconcile each one by checking the external system (for a
 * payment: look the key up at the provider, which most accept as their own idempotency key), then
 * record what really happened with one of the {@code resolve} calls. Each changes only keys still
 * in that state and returns false otherwise.
 */
public final class UnknownOutcomes {
    /** One key awaiting reconciliation. */
    public record UnknownOutcome(String tenant, String key, Instant claimedAt, Instant leaseExpiredAt) {
    }

    private final Jdbi jdbi;
    private final SqlStatements sql;
    private final ResultCodec codec;

    private UnknownOutcomes(Jdbi jdbi, IdempotencyConfig config) {
        this.jdbi = jdbi;
        this.sql = new SqlStatements(config.schema());
        this.codec = new ResultCodec(config);
    }

    /** Works on the schema and with the mapper of {@code config}. */
    public static UnknownOutcomes create(DataSource dataSource, IdempotencyConfig config) {
        return new UnknownOutcomes(RedactedErrors.withoutArgumentsInMessages(
                Jdbi.create(Objects.requireNonNull(dataSource, "dataSource"))),
                Objects.requireNonNull(config, "config"));
    }

    /** Up to {@code limit} keys awaiting reconciliation, oldest lease first. */
    public List<UnknownOutcome> list(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be positive (was " + limit + ")");
        }
        return withHandle(h -> h.createQuery(sql.listUnknownOutcomes).bind("limit", limit)
                .map((rs, ctx) -> new UnknownOutcome(rs.getString("tenant_id"), rs.getString("idempotency_key"),
                        rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("lease_expires_at").toInstant()))
                .list());
    }

    /** The external step took effect with this result; replays return it from now on. */
    public boolean resolveAsCompleted(String tenant, String key, Object result) {
        IdempotencyKeys.validate(key, tenant);
        ResultCodec.StoredResult stored = codec.encode(result, result == null ? null : result.getClass());
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsCompleted)
                .bind("tenant", tenant).bind("key", key)
                .bind("result", stored.json()).bind("resultType", stored.typeName())
                .execute()) == 1;
    }

    /** The external step ended in this business failure; replays throw it from now on. */
    public boolean resolveAsFailed(String tenant, String key, BusinessFailure failure) {
        IdempotencyKeys.validate(key, tenant);
        Objects.requireNonNull(failure, "failure");
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsFailed)
                .bind("tenant", tenant).bind("key", key).bind("failure", codec.encodeFailure(failure))
                .execute()) == 1;
    }

    /** The external step did not take effect; the next call with this key runs it again. */
    public boolean resolveAsNotRun(String tenant, String key) {
        IdempotencyKeys.validate(key, tenant);
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsNotRun)
                .bind("tenant", tenant).bind("key", key)
                .execute()) == 1;
    }

    /** Runs on a handle; a failure carries no bound result or failure text (see {@link RedactedErrors}). */
    private <R> R withHandle(org.jdbi.v3.core.HandleCallback<R, RuntimeException> callback) {
        try {
            return jdbi.withHandle(callback);
        } catch (RuntimeException e) {
            throw RedactedErrors.redact(e);
        }
    }
}

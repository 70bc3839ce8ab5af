package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.jdbc.internal.RedactedErrors;
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
 * in that state and returns false otherwise. Such a key is never purged by retention nor reclaimed
 * by a new call while it waits; a resolved outcome is then replayed for at least one more retention.
 * A missing migration or wrong schema fails with {@link SchemaNotMigratedException}.
 */
public final class UnknownOutcomes {
    /** One key awaiting reconciliation; {@code leaseExpiredAt} is null only for a row marked so by hand. */
    public record UnknownOutcome(String key, String tenant, Instant claimedAt, Instant leaseExpiredAt) {
    }

    private final Jdbi jdbi;
    private final String schema;
    private final ExecutorSql.UnknownOutcomeStatements sql;
    private final ResultCodec codec;
    private final double retentionSeconds;

    private UnknownOutcomes(Jdbi jdbi, IdempotencyConfig config) {
        this.jdbi = jdbi;
        this.schema = config.schema();
        this.sql = new ExecutorSql.UnknownOutcomeStatements(config.schema());
        this.codec = new ResultCodec(config);
        this.retentionSeconds = config.retention().toMillis() / 1000.0;
    }

    /** An operator's view on {@code dataSource}; the configuration defaults to {@link IdempotencyConfig#defaults()}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /** Up to {@code limit} keys awaiting reconciliation, oldest lease first. */
    public List<UnknownOutcome> list(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be positive (was " + limit + ")");
        }
        return withHandle(h -> h.createQuery(sql.listUnknownOutcomes).bind("limit", limit)
                .map((rs, ctx) -> new UnknownOutcome(rs.getString("idempotency_key"), rs.getString("tenant_id"),
                        rs.getTimestamp("created_at").toInstant(), instant(rs.getTimestamp("lease_expires_at"))))
                .list());
    }

    /** The external step took effect with this result; replays return it from now on. */
    public boolean resolveAsCompleted(String key, String tenant, Object result) {
        IdempotencyKeys.validate(key, tenant);
        ResultCodec.StoredResult stored = codec.encode(result, result == null ? null : result.getClass());
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsCompleted)
                .bind("tenant", tenant).bind("key", key)
                .bind("result", stored.json()).bind("resultType", stored.typeName())
                .bind("retentionSeconds", retentionSeconds)
                .execute()) == 1;
    }

    /** The external step ended in this business failure; replays throw it from now on. */
    public boolean resolveAsFailed(String key, String tenant, BusinessFailure failure) {
        IdempotencyKeys.validate(key, tenant);
        Objects.requireNonNull(failure, "failure");
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsFailed)
                .bind("tenant", tenant).bind("key", key).bind("failure", codec.encodeFailure(failure))
                .bind("retentionSeconds", retentionSeconds)
                .execute()) == 1;
    }

    /** The external step did not take effect; the next call with this key runs it again. */
    public boolean resolveAsNotRun(String key, String tenant) {
        IdempotencyKeys.validate(key, tenant);
        return withHandle(h -> h.createUpdate(sql.resolveUnknownAsNotRun)
                .bind("tenant", tenant).bind("key", key)
                .execute()) == 1;
    }

    private static Instant instant(java.sql.Timestamp timestamp) {
        return timestamp == null ? null : timestamp.toInstant();
    }

    /**
     * Runs on a handle; a failure carries no bound result or failure text (see {@link RedactedErrors}),
     * and a missing table names the migration.
     */
    private <R> R withHandle(org.jdbi.v3.core.HandleCallback<R, RuntimeException> work) {
        try {
            return jdbi.withHandle(work);
        } catch (RuntimeException e) {
            throw DatabaseErrors.schemaMissing(RedactedErrors.redact(e), schema, "IdempotencyConfig.schema");
        }
    }

    /** Builds {@link UnknownOutcomes}; touches no database. */
    public static final class Builder {
        private final DataSource dataSource;
        private IdempotencyConfig config = IdempotencyConfig.defaults();

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /**
         * The executor's configuration: its schema, its object mapper (for results), and its retention
         * (a resolved outcome is replayed for at least one more retention).
         */
        public Builder config(IdempotencyConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        public UnknownOutcomes build() {
            return new UnknownOutcomes(RedactedErrors.withoutArgumentsInMessages(Jdbi.create(dataSource)), config);
        }
    }
}

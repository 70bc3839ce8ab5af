package dev.idempotency.outbox;

import dev.idempotency.core.internal.SchemaNames;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.TemplateEngine;

/**
 * The operator's view of dead letters (rows of {@code outbox_retries} with status dead): lists them,
 * deletes one for good, and puts one or all back to pending with their attempts reset, due now, so a running relay
 * publishes them again (within its {@code idlePollMax}: a relay with no pending retries looks for
 * them that often); while one is pending, its key's newer events wait behind it.
 *
 * <p>A requeued event is published after later events of its key that already went out while it
 * was dead: requeueing trades that key's order for delivery, which is the operator's call.
 */
public final class OutboxDeadLetters {
    /** Rows requeued per statement by {@link #requeueAll()}, so no statement locks many rows for long. */
    private static final int REQUEUE_CHUNK = 1000;

    private final Jdbi jdbi;
    private final String list;
    private final String requeueOne;
    private final String requeueSome;
    private final String deleteOne;
    private final String count;

    /** A builder of the OutboxDeadLetters view over {@code dataSource}; the schema defaults to {@code idempotency}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    private OutboxDeadLetters(DataSource dataSource, String schema) {
        RelaySql sql = new RelaySql(schema);
        this.jdbi = RedactedErrors.withoutArgumentsInMessages(Jdbi.create(dataSource));
        this.jdbi.setTemplateEngine(TemplateEngine.NOP);
        this.list = sql.listDead;
        this.requeueOne = sql.requeueOne;
        this.requeueSome = sql.requeueSome;
        this.deleteOne = sql.deleteDead;
        this.count = sql.countDead;
    }

    /** Up to {@code limit} (1 to 10000) dead letters, oldest first. */
    public List<OutboxDeadLetter> list(int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000 (was " + limit + ")");
        }
        return jdbi.withHandle(h -> h.createQuery(list)
                .bind("limit", limit)
                .map((rs, ctx) -> new OutboxDeadLetter(rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"),
                        rs.getString("topic"), rs.getString("partition_key"), rs.getInt("attempts"),
                        rs.getString("last_error"), rs.getObject("created_at", OffsetDateTime.class).toInstant()))
                .list());
    }

    /** How many events are dead-lettered. */
    public long count() {
        return jdbi.withHandle(h -> h.createQuery(count).mapTo(Long.class).one());
    }

    /** Puts dead letter {@code id} back to pending; false when no dead letter has that id. */
    public boolean requeue(long id) {
        return jdbi.withHandle(h -> h.createUpdate(requeueOne).bind("id", id).execute()) == 1;
    }

    /**
     * Deletes dead letter {@code id} for good, so it is never published; false when no dead letter has
     * that id (requeued, published or deleted already). Its key's other events are not affected.
     */
    public boolean delete(long id) {
        return jdbi.withHandle(h -> h.createUpdate(deleteOne).bind("id", id).execute()) == 1;
    }

    /** Puts every dead letter back to pending, a thousand rows per statement; returns how many. */
    public long requeueAll() {
        long total = 0;
        int changed;
        do {
            changed = jdbi.withHandle(h -> h.createUpdate(requeueSome).bind("limit", REQUEUE_CHUNK).execute());
            total += changed;
        } while (changed > 0);
        return total;
    }

    /** Collects the schema of an {@link OutboxDeadLetters}; {@link #build()} validates it. */
    public static final class Builder {
        private final DataSource dataSource;
        private String schema = SchemaNames.DEFAULT;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The schema the migrations were applied to (validated like {@link OutboxRelayConfig#schema()}). */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /** Validates the schema name; an {@link IllegalArgumentException} says why it is refused. */
        public OutboxDeadLetters build() {
            return new OutboxDeadLetters(dataSource, OutboxRelayConfig.requireValidSchema(schema));
        }
    }
}

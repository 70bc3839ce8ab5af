package dev.idempotency.outbox;

import dev.idempotency.core.internal.SchemaNames;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.TemplateEngine;

/**
 * How far the relays are behind, for gauges: the number of pending events and the age of the oldest
 * one, both read from the database (ages by the database clock). Each call is one query, which reads
 * the events past the relays' positions by the txid index (cheap when the relays keep up).
 */
public final class OutboxBacklog {
    private final Jdbi jdbi;
    private final String countPending;
    private final String oldestPendingAge;

    /** A builder of the OutboxBacklog view over {@code dataSource}; the schema defaults to {@code idempotency}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    private OutboxBacklog(DataSource dataSource, String schema) {
        RelaySql sql = new RelaySql(schema);
        this.jdbi = RedactedErrors.withoutArgumentsInMessages(Jdbi.create(dataSource));
        this.jdbi.setTemplateEngine(TemplateEngine.NOP);
        this.countPending = sql.countPending;
        this.oldestPendingAge = sql.oldestPendingAge;
    }

    /**
     * Events not yet published nor dead-lettered: those no relay position has passed yet (all of them
     * before the first relay ran), plus those waiting in outbox_retries.
     */
    public long pendingCount() {
        return jdbi.withHandle(h -> h.createQuery(countPending).addCustomizer(PlannedAtEachCall.INSTANCE).mapTo(Long.class).one());
    }

    /** How long the oldest pending event has waited since it was written; zero when none is pending. */
    public Duration oldestPendingAge() {
        return jdbi.withHandle(h -> h.createQuery(oldestPendingAge).addCustomizer(PlannedAtEachCall.INSTANCE).mapTo(Long.class).findOne())
                .map(millis -> Duration.ofMillis(Math.max(0, millis)))
                .orElse(Duration.ZERO);
    }

    /** Collects the schema of an {@link OutboxBacklog}; {@link #build()} validates it. */
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
        public OutboxBacklog build() {
            return new OutboxBacklog(dataSource, OutboxRelayConfig.requireValidSchema(schema));
        }
    }
}

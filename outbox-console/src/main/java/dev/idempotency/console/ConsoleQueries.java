package dev.idempotency.console;

import dev.idempotency.jdbc.internal.RedactedErrors;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.TemplateEngine;

/** Runs {@link ConsoleSql}'s reads and maps their rows to what the pages show. */
final class ConsoleQueries {
    /** A relay that heartbeats, the partitions it holds and when those leases end (null when it holds none). */
    record Relay(String instanceId, Instant startedAt, Instant heartbeatAt, boolean alive, List<Integer> partitions,
                 Instant firstLeaseEnd, Instant lastLeaseEnd) {
    }

    /** How many partitions exist, and how many no relay holds. */
    record Partitions(long total, long unheld) {
    }

    /** One dead letter as its detail page shows it: everything but the payload. */
    record DeadLetterDetail(long id, String messageId, String tenant, String topic, String partitionKey, String headers,
                            int attempts, String lastError, Instant createdAt, Instant deadSince) {
    }

    /** A generation table's size and rows as the catalog estimates them (rows -1: not yet analyzed). */
    record Generation(String table, long bytes, long estimatedRows, boolean current) {
    }

    /** One minute's events: when it began (epoch seconds), how many were written, how many of those are published. */
    record Minute(long start, long written, long published) {
    }

    /** Events waiting for another attempt after a failed one, and the latest one's error (null when none). */
    record Retrying(long count, String lastError) {
    }

    private final Jdbi jdbi;
    private final ConsoleSql sql;
    private final String schema;

    ConsoleQueries(DataSource dataSource, String schema) {
        this.sql = new ConsoleSql(schema);
        this.schema = schema;
        this.jdbi = RedactedErrors.withoutArgumentsInMessages(Jdbi.create(dataSource));
        this.jdbi.setTemplateEngine(TemplateEngine.NOP);
    }

    List<Relay> relays() {
        return jdbi.withHandle(h -> h.createQuery(sql.relays).map((rs, ctx) -> new Relay(rs.getString("instance_id"),
                instant(rs, "started_at"), instant(rs, "heartbeat_at"), rs.getBoolean("alive"), integers(rs.getArray("partitions")),
                instant(rs, "first_lease_end"), instant(rs, "last_lease_end"))).list());
    }

    Partitions partitions() {
        return jdbi.withHandle(h -> h.createQuery(sql.partitions)
                .map((rs, ctx) -> new Partitions(rs.getLong("total"), rs.getLong("unheld"))).one());
    }

    Optional<DeadLetterDetail> deadLetter(long id) {
        return jdbi.withHandle(h -> h.createQuery(sql.deadLetter).bind("id", id).map((rs, ctx) -> new DeadLetterDetail(
                rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"), rs.getString("topic"),
                rs.getString("partition_key"), rs.getString("headers"), rs.getInt("attempts"), rs.getString("last_error"),
                instant(rs, "created_at"), instant(rs, "moved_at"))).findOne());
    }

    Optional<String> deadLetterPayload(long id) {
        return jdbi.withHandle(h -> h.createQuery(sql.deadLetterPayload).bind("id", id).mapTo(String.class).findOne());
    }

    List<Generation> generations() {
        return jdbi.withHandle(h -> h.createQuery(sql.generations).bind("schema", schema).map((rs, ctx) -> new Generation(
                rs.getString("table_name"), rs.getLong("bytes"), rs.getLong("estimated_rows"), rs.getBoolean("current"))).list());
    }

    List<Minute> rates() {
        return jdbi.withHandle(h -> h.createQuery(sql.rates).map((rs, ctx) -> new Minute(rs.getLong("minute"),
                rs.getLong("written"), rs.getLong("published"))).list());
    }

    Retrying retrying() {
        return jdbi.withHandle(h -> h.createQuery(sql.retrying)
                .map((rs, ctx) -> new Retrying(rs.getLong("retrying"), rs.getString("last_error"))).one());
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
        return value == null ? null : value.toInstant();
    }

    private static List<Integer> integers(Array array) throws SQLException {
        return array == null ? List.of() : List.of((Integer[]) array.getArray());
    }
}

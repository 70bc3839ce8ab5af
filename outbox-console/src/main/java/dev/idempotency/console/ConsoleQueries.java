package dev.idempotency.console;

import dev.idempotency.jdbc.internal.RedactedErrors;
import dev.idempotency.outbox.OutboxDeadLetter;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.Query;
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

    /** How many keys wait behind a retry, and how many of their events wait in outbox_retries. */
    record HeldBack(long keys, long events) {
    }

    /**
     * A key held back behind a retry: its first waiting event (the one retried next), that event's
     * attempts, next attempt (database clock) and last error, and how many of the key's events wait.
     */
    record HeldBackKey(long firstEventId, String tenant, String topic, String partitionKey, int attempts,
                       Instant nextAttemptAt, String lastError, long waiting) {
    }

    /**
     * An idempotency key as the executor left it, without what it stores; {@code leaseExpiresAt} is null
     * for a key without a lease, {@code failureCode} for a key that did not fail.
     */
    record KeyState(String tenant, String key, String status, String failureCode, String resultType, boolean hasResult,
                    Instant claimedAt, Instant updatedAt, Instant expiresAt, Instant leaseExpiresAt, boolean expired,
                    boolean leaseRanOut) {
        /** The sweeper failed it when its lease ran out: an outcome nobody knows, waiting for an operator. */
        boolean unknownOutcome() {
            return "failed".equals(status) && "lease_expired".equals(failureCode);
        }
    }

    /** What a key stores, as pretty JSON; either may be null. */
    record StoredOutcome(String result, String failure) {
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

    /** Up to {@code limit} dead letters the filter keeps, oldest first. */
    List<OutboxDeadLetter> deadLetters(DeadLetterFilter filter, int limit) {
        return jdbi.withHandle(h -> filtered(h.createQuery(sql.deadLettersMatching), filter).bind("limit", limit)
                .map((rs, ctx) -> new OutboxDeadLetter(rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"),
                        rs.getString("topic"), rs.getString("partition_key"), rs.getInt("attempts"),
                        rs.getString("last_error"), instant(rs, "created_at")))
                .list());
    }

    long countDeadLetters(DeadLetterFilter filter) {
        return jdbi.withHandle(h -> filtered(h.createQuery(sql.countDeadLettersMatching), filter).mapTo(Long.class).one());
    }

    private static Query filtered(Query query, DeadLetterFilter filter) {
        return query.bind("topic", filter.topic()).bind("tenant", filter.tenant()).bind("error", filter.error())
                .bind("olderThanSeconds", filter.olderThanSeconds());
    }

    List<HeldBackKey> heldBackKeys(int limit) {
        return jdbi.withHandle(h -> h.createQuery(sql.heldBackKeys).bind("limit", limit).map((rs, ctx) -> new HeldBackKey(
                rs.getLong("event_id"), rs.getString("tenant_id"), rs.getString("topic"), rs.getString("partition_key"),
                rs.getInt("attempts"), instant(rs, "next_attempt_at"), rs.getString("last_error"), rs.getLong("waiting")))
                .list());
    }

    HeldBack heldBack() {
        return jdbi.withHandle(h -> h.createQuery(sql.countHeldBack)
                .map((rs, ctx) -> new HeldBack(rs.getLong("keys"), rs.getLong("events"))).one());
    }

    Optional<KeyState> key(String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery(sql.key).bind("tenant", tenant).bind("key", key).map((rs, ctx) -> new KeyState(
                tenant, key, rs.getString("status"), rs.getString("failure_code"), rs.getString("result_type"),
                rs.getBoolean("has_result"), instant(rs, "created_at"), instant(rs, "updated_at"), instant(rs, "expires_at"),
                instant(rs, "lease_expires_at"), rs.getBoolean("expired"), rs.getBoolean("lease_ran_out"))).findOne());
    }

    Optional<StoredOutcome> keyStored(String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery(sql.keyStored).bind("tenant", tenant).bind("key", key)
                .map((rs, ctx) -> new StoredOutcome(rs.getString("result"), rs.getString("failure"))).findOne());
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
        return value == null ? null : value.toInstant();
    }

    private static List<Integer> integers(Array array) throws SQLException {
        return array == null ? List.of() : List.of((Integer[]) array.getArray());
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.LockWaits;
import dev.idempotency.testing.MigratedSchema;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link MigratedSchema} with the library's tables and a {@code payments} table that callbacks
 * write to, and executors built on it. Register it like the schema it wraps:
 * {@code @RegisterExtension static final ExecutorFixture db = new ExecutorFixture(4);}.
 */
final class ExecutorFixture implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
    static final String PAYMENTS = "CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "tenant_id text NOT NULL, request_key text NOT NULL, amount bigint NOT NULL)";

    final MigratedSchema schema;
    /** Jdbi on {@link #schema}'s pool; set when the schema starts. */
    Jdbi jdbi;

    ExecutorFixture(int poolSize) {
        schema = MigratedSchema.builder(IdempotencyMigrations::migrate).poolSize(poolSize).afterMigration(PAYMENTS).build();
    }

    /** A schema migrated up to {@code lastVersion} only, as a database that has not applied the later migrations yet. */
    ExecutorFixture(int poolSize, String lastVersion) {
        schema = MigratedSchema.builder((dataSource, name) -> IdempotencyMigrations.migrate(dataSource, name, lastVersion))
                .poolSize(poolSize).afterMigration(PAYMENTS).build();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        schema.beforeAll(context);
        jdbi = Jdbi.create(schema.dataSource());
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        schema.beforeEach(context);
        if (jdbi == null) {
            jdbi = Jdbi.create(schema.dataSource());
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        schema.afterEach(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        schema.afterAll(context);
    }

    PostgresIdempotentExecutor executor() {
        return executor(config -> { });
    }

    PostgresIdempotentExecutor executor(Consumer<IdempotencyConfig.Builder> settings) {
        IdempotencyConfig.Builder config = IdempotencyConfig.builder().schema(schema.name());
        settings.accept(config);
        return PostgresIdempotentExecutor.builder(schema.dataSource()).config(config.build()).build();
    }

    /** Until {@code callers} calls wait on another call's lock of a key row of this schema (KeyClaims' claim). */
    void awaitCallersWaitingOnAKeyRow(int callers) {
        LockWaits.awaitStatements(schema.dataSource(), "\"" + schema.name() + "\".idempotency_keys", callers);
    }

    /** Until {@code duplicates} calls wait in this JVM for the first call of their key, holding no connection. */
    static void awaitDuplicatesWaitingInProcess(int duplicates) {
        Await.threadsWaitingIn(InFlightCalls.class.getName() + "$Duplicate", "awaitFirst", duplicates);
    }

    /** Until {@code column} (a timestamp such as {@code expires_at}) of {@code key}'s row is past the database's clock. */
    void awaitPast(String key, String column) {
        Await.until(column + " of " + key + " past", () -> jdbi.withHandle(h -> h.createQuery("SELECT " + column
                + " < now() FROM idempotency_keys WHERE idempotency_key = :k").bind("k", key).mapTo(Boolean.class).one()));
    }

    static String newKey() {
        return "key-" + UUID.randomUUID();
    }

    /** The business write the callbacks make: one payment row for the request. */
    static long insertPayment(PostgresTransaction tx, long amount) {
        return tx.handle().createUpdate("INSERT INTO payments (tenant_id, request_key, amount) VALUES (:t, :k, :a)")
                .bind("t", tx.tenant()).bind("k", tx.key()).bind("a", amount)
                .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
    }

    long payments(String key, String tenant) {
        return count("SELECT count(*) FROM payments WHERE tenant_id = :t AND request_key = :k", tenant, key);
    }

    long outboxEvents(String tenant, String partitionKey) {
        return count("SELECT count(*) FROM outbox_events WHERE tenant_id = :t AND partition_key = :k", tenant, partitionKey);
    }

    long keyRows(String key, String tenant) {
        return count("SELECT count(*) FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k", tenant, key);
    }

    Map<String, Object> keyRow(String key, String tenant) {
        return jdbi.withHandle(h -> h.createQuery("SELECT * FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k")
                .bind("t", tenant).bind("k", key).mapToMap().one());
    }

    /** The events of a key as a user sees them, with their state from the outbox_event_states view (V4). */
    List<Map<String, Object>> outboxRows(String tenant, String partitionKey) {
        return jdbi.withHandle(h -> h.createQuery("SELECT e.id, e.tenant_id, e.topic, e.partition_key, e.payload::text AS payload, "
                        + "e.headers::text AS headers, s.status FROM outbox_events e JOIN outbox_event_states s ON s.id = e.id "
                        + "WHERE e.tenant_id = :t AND e.partition_key = :k ORDER BY e.id")
                .bind("t", tenant).bind("k", partitionKey).mapToMap().list());
    }

    /** Inserts {@code count} events into generation table {@code generation}, one key each, as a writer that read that generation. */
    void insertEvents(int generation, int count) {
        // One transaction (one simple query) writing events of many keys: it locks the outbox instead of each key (V8).
        schema.execute("SELECT outbox_lock_for_bulk_write(); "
                + "INSERT INTO outbox_events (generation, tenant_id, topic, partition_key, payload) SELECT " + generation
                + ", 't1', 'payments', 'p' || g, '{}' FROM generate_series(1, " + count + ") g");
    }

    /**
     * Stands in for relays (V4 positions): {@code partitions} virtual partitions whose consumed
     * snapshot is now, so every event committed so far counts as consumed.
     */
    void relaysConsumedEverything(int partitions) {
        schema.execute("INSERT INTO outbox_relay_partitions (partition_no) SELECT g FROM generate_series(0, " + (partitions - 1)
                + ") g ON CONFLICT DO NOTHING; UPDATE outbox_relay_partitions SET consumed_snapshot = pg_current_snapshot()");
    }

    /** The generation writers insert into now. */
    int currentGeneration() {
        return jdbi.withHandle(h -> h.createQuery("SELECT current_generation FROM outbox_generation").mapTo(Integer.class).one());
    }

    /** Sets when the generations last rotated, e.g. {@code "31 minutes"} ago. */
    void lastRotatedAgo(String interval) {
        schema.execute("UPDATE outbox_generation SET rotated_at = now() - interval '" + interval + "'");
    }

    /** Events in generation table {@code generation}. */
    long eventsIn(int generation) {
        return jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM outbox_events_" + generation).mapTo(Long.class).one());
    }

    private long count(String sql, String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery(sql).bind("t", tenant).bind("k", key).mapTo(Long.class).one());
    }
}

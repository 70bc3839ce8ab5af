package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import org.jdbi.v3.core.Jdbi;

/**
 * A schema of the test class's own with the library's tables and a {@code payments} table that
 * callbacks write to, and executors built on it.
 */
final class ExecutorFixture implements AutoCloseable {
    final TestSchema schema;
    final Jdbi jdbi;

    ExecutorFixture(String name, int poolSize) {
        schema = TestDatabase.get().newSchema(name, poolSize);
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        schema.execute("CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                + "tenant_id text NOT NULL, request_key text NOT NULL, amount bigint NOT NULL)");
        jdbi = Jdbi.create(schema.dataSource());
    }

    PostgresIdempotentExecutor executor() {
        return executor(config -> { });
    }

    PostgresIdempotentExecutor executor(Consumer<IdempotencyConfig.Builder> settings) {
        IdempotencyConfig.Builder config = IdempotencyConfig.builder().schema(schema.name());
        settings.accept(config);
        return PostgresIdempotentExecutor.builder(schema.dataSource()).config(config.build()).build();
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

    long payments(String tenant, String key) {
        return count("SELECT count(*) FROM payments WHERE tenant_id = :t AND request_key = :k", tenant, key);
    }

    long outboxEvents(String tenant, String partitionKey) {
        return count("SELECT count(*) FROM outbox_events WHERE tenant_id = :t AND partition_key = :k", tenant, partitionKey);
    }

    long keyRows(String tenant, String key) {
        return count("SELECT count(*) FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k", tenant, key);
    }

    Map<String, Object> keyRow(String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery("SELECT * FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k")
                .bind("t", tenant).bind("k", key).mapToMap().one());
    }

    List<Map<String, Object>> outboxRows(String tenant, String partitionKey) {
        return jdbi.withHandle(h -> h.createQuery("SELECT id, tenant_id, topic, partition_key, payload::text AS payload, "
                        + "headers::text AS headers, status FROM outbox_events WHERE tenant_id = :t AND partition_key = :k ORDER BY id")
                .bind("t", tenant).bind("k", partitionKey).mapToMap().list());
    }

    private long count(String sql, String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery(sql).bind("t", tenant).bind("k", key).mapTo(Long.class).one());
    }

    @Override
    public void close() {
        schema.close();
    }
}

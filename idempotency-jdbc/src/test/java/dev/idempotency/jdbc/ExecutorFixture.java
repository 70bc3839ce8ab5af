package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
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

    List<Map<String, Object>> outboxRows(String tenant, String partitionKey) {
        return jdbi.withHandle(h -> h.createQuery("SELECT id, tenant_id, topic, partition_key, payload::text AS payload, "
                        + "headers::text AS headers, status FROM outbox_events WHERE tenant_id = :t AND partition_key = :k ORDER BY id")
                .bind("t", tenant).bind("k", partitionKey).mapToMap().list());
    }

    private long count(String sql, String tenant, String key) {
        return jdbi.withHandle(h -> h.createQuery(sql).bind("t", tenant).bind("k", key).mapTo(Long.class).one());
    }
}

package dev.idempotency.http;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.testing.MigratedSchema;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link MigratedSchema} with the library's tables and a {@code payments} table, the real
 * {@link PostgresIdempotentExecutor} on it, and a payments handler that writes in the key's transaction.
 */
final class HttpFixture implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
    static final String PAYMENTS = "CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "tenant_id text NOT NULL, request_key text NOT NULL, amount bigint NOT NULL)";

    final MigratedSchema schema;
    private Jdbi jdbi;

    HttpFixture(int poolSize) {
        schema = MigratedSchema.builder(IdempotencyMigrations::migrate).poolSize(poolSize).afterMigration(PAYMENTS).build();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        schema.beforeAll(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        schema.beforeEach(context);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        schema.afterEach(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        schema.afterAll(context);
    }

    PostgresIdempotentExecutor executor(Duration waitBudget) {
        return executor(schema.dataSource(), waitBudget);
    }

    PostgresIdempotentExecutor executor(DataSource dataSource, Duration waitBudget) {
        return PostgresIdempotentExecutor.builder(dataSource)
                .config(IdempotencyConfig.builder().schema(schema.name()).waitBudget(waitBudget).build()).build();
    }

    IdempotentHttp<PostgresTransaction> http(Duration waitBudget, IdempotentHttpConfig config) {
        return IdempotentHttp.builder(executor(waitBudget)).config(config).build();
    }

    static String newKey() {
        return "key-" + UUID.randomUUID();
    }

    /** A keyed POST /payments with a JSON body, its key sent as one sf-string field line. */
    static HttpRequestData.Builder post(String key, String body) {
        return HttpRequestData.builder("POST", "/payments").contentType("application/json")
                .keyFieldLines(java.util.List.of("\"" + key + "\"")).body(body.getBytes(StandardCharsets.UTF_8));
    }

    /** Writes one payment row in the key's transaction and answers 201 with a body holding its id. */
    static HttpResponseData createPayment(PostgresTransaction tx, AtomicInteger runs, long amount) {
        runs.incrementAndGet();
        long id = tx.handle().createUpdate("INSERT INTO payments (tenant_id, request_key, amount) VALUES (:t, :k, :a)")
                .bind("t", tx.tenant()).bind("k", tx.key()).bind("a", amount)
                .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
        return HttpResponseData.builder(201).contentType("application/json")
                .header("Location", "/payments/" + id)
                .header("Set-Cookie", "session=first-caller; HttpOnly")
                .header("X-Request-Id", UUID.randomUUID().toString())
                .body(("{\"id\":" + id + ",\"amount\":" + amount + ",\"nonce\":\"" + UUID.randomUUID() + "\"}")
                        .getBytes(StandardCharsets.UTF_8))
                .build();
    }

    long payments(String key, String tenant) {
        return count("SELECT count(*) FROM payments WHERE tenant_id = :t AND request_key = :k", tenant, key);
    }

    long keyRows(String key, String tenant) {
        return count("SELECT count(*) FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k", tenant, key);
    }

    long keyRowsOfTenant(String tenant) {
        return jdbi().withHandle(h -> h.createQuery("SELECT count(*) FROM idempotency_keys WHERE tenant_id = :t")
                .bind("t", tenant).mapTo(Long.class).one());
    }

    /** The stored result's JSON as PostgreSQL holds it. */
    String storedResult(String tenant, String key) {
        return jdbi().withHandle(h -> h.createQuery(
                        "SELECT result::text FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k")
                .bind("t", tenant).bind("k", key).mapTo(String.class).one());
    }

    private long count(String sql, String tenant, String key) {
        return jdbi().withHandle(h -> h.createQuery(sql).bind("t", tenant).bind("k", key).mapTo(Long.class).one());
    }

    private synchronized Jdbi jdbi() {
        if (jdbi == null) {
            jdbi = Jdbi.create(schema.dataSource());
        }
        return jdbi;
    }
}

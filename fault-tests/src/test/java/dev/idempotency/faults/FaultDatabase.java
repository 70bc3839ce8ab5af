package dev.idempotency.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.MigratedSchema;
import dev.idempotency.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A schema of one test's own, with the library's tables, the business tables the workload writes
 * ({@code effects}, deliberately without a unique key so a double execution shows as two rows, and
 * {@code hot_rows} for deadlocks), and small pools whose connections carry an application name per
 * role, so a fault injector can find and kill exactly the connections of one role. Built on
 * {@link MigratedSchema}; register it with {@code @RegisterExtension static final FaultDatabase db =
 * FaultDatabase.perClass();} or, inside one test, open it with {@link #onSharedServer} and close it.
 */
final class FaultDatabase implements BeforeAllCallback, AfterAllCallback, AutoCloseable {
    static final String BUSINESS_TABLES = "CREATE TABLE effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "tenant_id text NOT NULL, request_key text NOT NULL); "
            + "CREATE TABLE hot_rows (id int PRIMARY KEY, n bigint NOT NULL); "
            + "INSERT INTO hot_rows VALUES (1, 0), (2, 0)";

    private final TestDatabase server;
    private final MigratedSchema schema;
    private final List<HikariDataSource> pools = new ArrayList<>();
    private Jdbi jdbi;

    private FaultDatabase(TestDatabase server, String prefix) {
        this.server = server;
        MigratedSchema.Builder builder = MigratedSchema.builder(IdempotencyMigrations::migrate)
                .afterMigration(BUSINESS_TABLES).poolSize(1);
        if (server != null) {
            builder.server(server);
        }
        if (prefix != null) {
            builder.prefix(prefix);
        }
        this.schema = builder.build();
    }

    /** A schema on the shared test server, made when JUnit starts the class: register it as an extension. */
    static FaultDatabase perClass() {
        return new FaultDatabase(null, null);
    }

    /** A schema on the shared test server ({@link TestDatabase}), made now; the caller closes it. */
    static FaultDatabase onSharedServer(String prefix) {
        return new FaultDatabase(null, prefix).start();
    }

    /** A schema on a server of the test's own (e.g. {@link PrivatePostgres}), made now. */
    static FaultDatabase on(String url, String prefix) {
        return new FaultDatabase(TestDatabase.at(url, null, null), prefix).start();
    }

    private FaultDatabase start() {
        schema.start();
        return started();
    }

    private FaultDatabase started() {
        this.jdbi = Jdbi.create(pool("admin", 2));
        return this;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        schema.beforeAll(context);
        started();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    private TestDatabase server() {
        return server != null ? server : TestDatabase.get();
    }

    String schema() {
        return schema.name();
    }

    String url() {
        return server().url();
    }

    String user() {
        return server().user();
    }

    String password() {
        return server().password();
    }

    /** Jdbi on a small pool for setup and accounting, never a target of faults. */
    Jdbi jdbi() {
        return jdbi;
    }

    /** The application name the connections of {@code role} carry in pg_stat_activity. */
    String applicationName(String role) {
        return schema.name() + "-" + role;
    }

    /**
     * A pool of {@code size} on this schema for {@code role}; closed with this database. A short
     * connection timeout, so that callers meet a down server with a quick retryable error.
     */
    HikariDataSource pool(String role, int size) {
        return pool(role, size, 2_000);
    }

    /** As {@link #pool(String, int)}, with the time a caller waits for a free connection. */
    HikariDataSource pool(String role, int size, long connectionTimeoutMillis) {
        HikariConfig config = server().poolConfig(schema.name(), size);
        config.setConnectionTimeout(connectionTimeoutMillis);
        config.setInitializationFailTimeout(-1);
        config.setPoolName(applicationName(role));
        config.addDataSourceProperty("ApplicationName", applicationName(role));
        HikariDataSource pool = new HikariDataSource(config);
        synchronized (pools) {
            pools.add(pool);
        }
        return pool;
    }

    /** An executor on a pool of its own for {@code role}. */
    PostgresIdempotentExecutor executor(String role, int poolSize, Runnable afterOutboxCommit) {
        return executor(pool(role, poolSize), afterOutboxCommit);
    }

    PostgresIdempotentExecutor executor(javax.sql.DataSource pool, Runnable afterOutboxCommit) {
        return PostgresIdempotentExecutor.builder(pool)
                .config(IdempotencyConfig.builder().schema(schema.name()).waitBudget(Duration.ofSeconds(2)).build())
                .afterOutboxCommit(afterOutboxCommit)
                .build();
    }

    /** Runs {@code sql} on a fresh connection outside every pool. */
    void execute(String sql) {
        server().execute(sql);
    }

    Connection connect() throws SQLException {
        return server().connect();
    }

    @Override
    public void close() {
        synchronized (pools) {
            pools.forEach(HikariDataSource::close);
        }
        try {
            schema.close();
        } catch (IllegalStateException e) {
            // The server may already be gone (a private one); nothing is left to clean.
        }
    }
}

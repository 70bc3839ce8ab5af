package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import picocli.CommandLine.Option;

/** Where the database is: flags, each with an environment variable, defaulting to the local server. */
final class DatabaseOptions {
    @Option(names = "--jdbc-url", defaultValue = "${env:IDEMPOTENCY_JDBC_URL:-jdbc:postgresql://127.0.0.1:5432/test?user=postgres}",
            description = "JDBC URL of the PostgreSQL database (env IDEMPOTENCY_JDBC_URL; default: ${DEFAULT-VALUE}).")
    String jdbcUrl;

    @Option(names = "--db-user", defaultValue = "${env:IDEMPOTENCY_DB_USER}",
            description = "Database user, if the URL does not name one (env IDEMPOTENCY_DB_USER).")
    String user;

    @Option(names = "--db-password", defaultValue = "${env:IDEMPOTENCY_DB_PASSWORD}", arity = "0..1", interactive = true,
            description = "Database password (env IDEMPOTENCY_DB_PASSWORD).")
    String password;

    @Option(names = "--schema", defaultValue = "${env:IDEMPOTENCY_SCHEMA:-idempotency}",
            description = "Schema holding the library's tables (env IDEMPOTENCY_SCHEMA; default: ${DEFAULT-VALUE}).")
    String schema;

    HikariDataSource pool(String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
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

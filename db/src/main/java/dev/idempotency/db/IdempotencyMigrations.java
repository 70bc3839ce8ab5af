package dev.idempotency.db;

import dev.idempotency.core.internal.SchemaNames;
import java.util.Objects;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;

/**
 * Applies the library's tables (idempotency keys, outbox) to a schema of your choice, with a Flyway
 * history table of its own so it never touches your migrations. Applying twice is a no-op, and a
 * schema that already holds your tables keeps them.
 *
 * <p>If you run Flyway yourself you may instead add {@link #LOCATION} to your locations: the
 * scripts create their tables in Flyway's default schema. Their version numbers then share your
 * history table, which is why the separate history of {@link #migrate(DataSource, String)} is the
 * default advice.
 *
 * <p>Migrating takes one connection from the data source and nothing more, so it works on a pool of
 * any size, including one. Concurrent migrations of the same database wait for each other on a
 * session-level advisory lock; run them against PostgreSQL directly or through a pooler in session
 * mode, not through PgBouncer in transaction mode (Flyway also sets the session's search path).
 */
public final class IdempotencyMigrations {
    /** Where the migration scripts are on the classpath. */
    public static final String LOCATION = "classpath:db/migration/idempotency";
    /** The schema used when none is named; executors default to the same. */
    public static final String DEFAULT_SCHEMA = SchemaNames.DEFAULT;
    /** The Flyway history table this class keeps, inside the target schema. */
    public static final String HISTORY_TABLE = "idempotency_schema_history";

    private IdempotencyMigrations() {
    }

    /** Applies pending migrations to the {@value #DEFAULT_SCHEMA} schema, creating it if needed. */
    public static MigrateResult migrate(DataSource dataSource) {
        return migrate(dataSource, DEFAULT_SCHEMA);
    }

    /** Applies pending migrations to {@code schema}, creating it if needed; returns what Flyway did. */
    public static MigrateResult migrate(DataSource dataSource, String schema) {
        return flyway(dataSource, schema).migrate();
    }

    /**
     * Applies the migrations up to and including {@code version} (e.g. {@code "3"}) to {@code schema},
     * creating it if needed: the schema as an older release left it, to rehearse an upgrade or to
     * upgrade in steps. Later migrations stay pending for {@link #migrate(DataSource, String)}.
     */
    public static MigrateResult migrate(DataSource dataSource, String schema, String version) {
        return configuration(dataSource, schema).target(Objects.requireNonNull(version, "version")).load().migrate();
    }

    /** The Flyway instance {@link #migrate} uses, for {@code info()} or {@code validate()}. */
    public static Flyway flyway(DataSource dataSource, String schema) {
        return configuration(dataSource, schema).load();
    }

    private static FluentConfiguration configuration(DataSource dataSource, String schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        // The same rule as the executor's configuration: a plain lower-case identifier.
        SchemaNames.require(schema);
        FluentConfiguration configuration = Flyway.configure(IdempotencyMigrations.class.getClassLoader())
                .dataSource(dataSource)
                .locations(LOCATION)
                .schemas(schema)
                .defaultSchema(schema)
                .table(HISTORY_TABLE)
                // The schema may already hold the user's own tables: start our history at 0 beside them.
                .baselineOnMigrate(true)
                .baselineVersion("0");
        // Flyway's default PostgreSQL lock is a transaction-level lock held open on one connection
        // while the scripts run on a second: on a pool of one it waits out the pool's timeout and
        // leaves an empty history table behind. A session-level lock lets everything run on one.
        // getPlugin, not getExact: Flyway 11, which Spring Boot 3.5 applications resolve, has no getExact.
        configuration.getPluginRegister().getPlugin(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
        return configuration;
    }
}

package dev.idempotency.spring.boot;

import dev.idempotency.db.IdempotencyMigrations;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Applies the library's migrations when the context starts, before any bean that uses the tables:
 * Spring Boot's database initialization orders them ({@link IdempotencyDatabaseInitializerDetector},
 * {@link IdempotencyDependsOnDatabaseInitializationDetector}). The history table is the library's own, in the library's schema, so
 * its versions never collide with the application's.
 */
final class IdempotencyMigrator implements InitializingBean {
    private static final Logger log = LoggerFactory.getLogger(IdempotencyMigrator.class);

    private final DataSource dataSource;
    private final String schema;
    private final String by;

    IdempotencyMigrator(DataSource dataSource, String schema, String by) {
        this.dataSource = dataSource;
        this.schema = schema;
        this.by = by;
    }

    /** A migrator that applies nothing: {@code idempotency.migrations.mode=none}. */
    static IdempotencyMigrator none(String schema) {
        return new IdempotencyMigrator(null, schema, "nobody");
    }

    @Override
    public void afterPropertiesSet() {
        if (dataSource == null) {
            log.info("idempotency schema '{}' is not migrated by the application (idempotency.migrations.mode=none)",
                    schema);
            return;
        }
        int applied = IdempotencyMigrations.migrate(dataSource, schema).migrationsExecuted;
        log.info("idempotency schema '{}' migrated by {}: {} migration(s) applied", schema, by, applied);
    }
}

package dev.idempotency.spring.boot;

import java.util.Set;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;

/**
 * Tells Spring Boot's database initialization that {@link IdempotencyMigrator} initializes the
 * database, so that everything Boot makes wait for initialization (the application's
 * {@code JdbcTemplate}, {@code JdbcClient}, JPA, jOOQ, beans annotated
 * {@code @DependsOnDatabaseInitialization}, and the library's own beans) is created after the
 * library's tables exist. Ordered after Flyway's and Liquibase's detectors (orders 0 and 1): an
 * application migrating with them migrates first, into a schema still empty of ours (Flyway refuses a
 * non-empty schema without its history table), then the library's migrations run.
 * Registered in {@code META-INF/spring.factories}.
 */
public final class IdempotencyDatabaseInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {
    /** After Flyway's and Liquibase's detectors (0 and 1), before the SQL script initializers (near the lowest). */
    static final int ORDER = 100;

    @Override
    protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
        return Set.of(IdempotencyMigrator.class);
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}

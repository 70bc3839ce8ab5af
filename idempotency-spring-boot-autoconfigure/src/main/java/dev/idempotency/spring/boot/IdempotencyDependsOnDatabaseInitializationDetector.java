package dev.idempotency.spring.boot;

import dev.idempotency.core.IdempotentExecutor;
import java.util.Set;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;

/**
 * The library's beans that use its tables (the executor, an application's own one included, the
 * sweeper and the relay) wait for every database initializer, the library's migrations among them.
 * Registered in {@code META-INF/spring.factories}.
 */
public final class IdempotencyDependsOnDatabaseInitializationDetector
        extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

    @Override
    protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
        return Set.of(IdempotentExecutor.class, SweeperLifecycle.class, RelayLifecycle.class);
    }
}

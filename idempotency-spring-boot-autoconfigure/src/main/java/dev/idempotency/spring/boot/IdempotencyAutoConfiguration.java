package dev.idempotency.spring.boot;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import dev.idempotency.outbox.OutboxRelayListener;
import dev.idempotency.outbox.publisher.Publishers;
import dev.idempotency.spring.SpringCallerTransaction;
import dev.idempotency.spring.boot.IdempotencyProperties.MigrationMode;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.util.ClassUtils;

/**
 * Builds the library from the application's {@link DataSource}: the migrations, the executor, the
 * sweeper (on by default) and the outbox relay (off by default), each replaceable by a bean of the
 * application's own. Turned off as a whole by {@code idempotency.enabled=false}.
 */
@AutoConfiguration(afterName = {
        // Spring Boot 4.x
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
        // Spring Boot 3.5
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration"})
@ConditionalOnClass({PostgresIdempotentExecutor.class, DataSource.class})
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "idempotency", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(IdempotencyProperties.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
public class IdempotencyAutoConfiguration {
    private static final String OPEN_TELEMETRY = "io.opentelemetry.api.OpenTelemetry";

    /**
     * The library's migrations, a database initializer to Spring Boot
     * ({@link IdempotencyDatabaseInitializerDetector}): the beans that wait for database
     * initialization, the application's and the library's, are created after them. With the
     * application's Flyway (mode {@code flyway}, or {@code auto} when a {@link Flyway} bean exists)
     * they run after the application's own migration, on its Flyway's data source, into the
     * library's schema with the library's history table: sharing the application's history table
     * would put the library's V1..V3 beside the application's V1..V3, which Flyway refuses.
     */
    @Bean
    @ConditionalOnMissingBean
    IdempotencyMigrator idempotencyMigrator(DataSource dataSource, IdempotencyProperties properties,
                                            ObjectProvider<Flyway> flyways) {
        MigrationMode mode = properties.migrations().mode();
        if (mode == MigrationMode.NONE) {
            return IdempotencyMigrator.none(properties.schema());
        }
        Flyway flyway = mode == MigrationMode.LIBRARY ? null : flyways.getIfUnique();
        if (mode == MigrationMode.FLYWAY && flyway == null) {
            throw new IllegalStateException("idempotency.migrations.mode=flyway, but the application has no Flyway "
                    + "bean; add spring-boot-starter-flyway, or set idempotency.migrations.mode=library");
        }
        if (flyway != null) {
            return new IdempotencyMigrator(flyway.getConfiguration().getDataSource(), properties.schema(),
                    "the application's Flyway");
        }
        return new IdempotencyMigrator(dataSource, properties.schema(), "the library's migrator");
    }

    /**
     * The executor's settings from {@code idempotency.*}, then each {@link IdempotencyConfigCustomizer}
     * in order (e.g. to register result types); an application bean of this type replaces them.
     */
    @Bean
    @ConditionalOnMissingBean
    IdempotencyConfig idempotencyConfig(IdempotencyProperties properties,
                                        ObjectProvider<IdempotencyConfigCustomizer> customizers) {
        IdempotencyConfig.Builder config = IdempotencyConfig.builder()
                .schema(properties.schema())
                .retention(properties.retention())
                .waitBudget(properties.waitBudget())
                .maxResultBytes(properties.maxResultBytes())
                .maxOutboxPayloadBytes(properties.maxOutboxPayloadBytes());
        customizers.orderedStream().forEach(customizer -> customizer.customize(config));
        return config.build();
    }

    /**
     * The executor on the application's data source, joined to Spring's transactions. Its commits that wrote outbox events wake the
     * relay in this application, if one runs; its outcomes are counted when Micrometer is there.
     */
    /**
     * Which tracing the executor, the HTTP layer and the relay use: the application's
     * {@code io.opentelemetry.api.OpenTelemetry} bean when it has one (Spring Boot makes one with Micrometer
     * Tracing's OpenTelemetry bridge), so the library's spans go where the application's go; else
     * {@link Tracing#auto()}; {@code idempotency.tracing.enabled=false}: {@link Tracing#disabled()}. The
     * OpenTelemetry type is looked up by name, so nothing of it loads where it is absent.
     */
    @Bean
    @ConditionalOnMissingBean
    Tracing idempotencyTracing(IdempotencyProperties properties, ListableBeanFactory beans) {
        if (!properties.tracing().enabled()) {
            return Tracing.disabled();
        }
        ClassLoader loader = IdempotencyAutoConfiguration.class.getClassLoader();
        if (ClassUtils.isPresent(OPEN_TELEMETRY, loader)) {
            Object openTelemetry = beans.getBeanProvider(ClassUtils.resolveClassName(OPEN_TELEMETRY, loader)).getIfUnique();
            if (openTelemetry != null) {
                return Tracing.openTelemetry(openTelemetry);
            }
        }
        return Tracing.auto();
    }

    @Bean
    @ConditionalOnMissingBean(IdempotentExecutor.class)
    IdempotentExecutor<PostgresTransaction> idempotentExecutor(DataSource dataSource, IdempotencyConfig config,
                                                               Tracing tracing,
                                                               ObjectProvider<RelayLifecycle> relay,
                                                               ObjectProvider<ExecutorOutcomeListener> listeners) {
        RelayLifecycle wake = relay.getIfAvailable();
        PostgresIdempotentExecutor.Builder builder = PostgresIdempotentExecutor.builder(dataSource).config(config)
                .tracing(tracing)
                // Inside a Spring transaction on this DataSource, a call joins it: the application's
                // JdbcTemplate/JPA writes, the key and the events commit or roll back together.
                .joinCallerTransactions(SpringCallerTransaction.builder(dataSource).build());
        if (wake != null) {
            builder.afterOutboxCommit(wake::wakeUp);
        }
        PostgresIdempotentExecutor executor = builder.build();
        ExecutorWarmUp.run(executor);
        ExecutorOutcomeListener listener = listeners.getIfAvailable();
        return listener == null ? executor : new ObservedIdempotentExecutor(executor, listener);
    }

    /** The sweeper: fails expired leases, purges expired keys and published events; on unless turned off. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "idempotency.sweeper", name = "enabled", havingValue = "true", matchIfMissing = true)
    SweeperLifecycle idempotencySweeper(DataSource dataSource, IdempotencyProperties properties) {
        IdempotencyProperties.Sweeper settings = properties.sweeper();
        // Built now, so that bad settings fail the context at startup rather than at its first start.
        Sweeper.builder(dataSource).schema(properties.schema()).batchSize(settings.batchSize())
                .interval(settings.interval()).publishedEventRetention(settings.publishedEventRetention()).build()
                .close();
        return new SweeperLifecycle(() -> Sweeper.builder(dataSource).schema(properties.schema())
                .batchSize(settings.batchSize()).interval(settings.interval())
                .publishedEventRetention(settings.publishedEventRetention()).build());
    }

    /** The outbox relay in this application; off unless {@code idempotency.relay.enabled=true}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "idempotency.relay", name = "enabled", havingValue = "true")
    static class RelayConfiguration {

        /**
         * The publisher {@code idempotency.relay.publisher} names, built from
         * {@code idempotency.relay.settings.*}; an application {@link Publisher} bean replaces it.
         * Closed by the context after the relay stopped.
         */
        @Bean
        @ConditionalOnMissingBean
        Publisher outboxPublisher(IdempotencyProperties properties) {
            IdempotencyProperties.Relay relay = properties.relay();
            return Publishers.create(relay.publisher(), relay.settings());
        }

        @Bean
        @ConditionalOnMissingBean
        RelayLifecycle outboxRelay(DataSource dataSource, Publisher publisher, IdempotencyProperties properties,
                                   Tracing tracing, ObjectProvider<OutboxRelayListener> listeners) {
            IdempotencyProperties.Relay relay = properties.relay();
            OutboxRelayConfig.Builder config = OutboxRelayConfig.builder().schema(properties.schema())
                    .partitions(relay.partitions()).batchSize(relay.batchSize()).idlePollMax(relay.idlePollMax())
                    .linger(relay.linger()).positionWriteInterval(relay.positionWriteInterval())
                    .readAhead(relay.readAhead());
            if (!relay.instanceId().isEmpty()) {
                config.instanceId(relay.instanceId());
            }
            OutboxRelayConfig built = config.build();
            OutboxRelayListener listener = CompositeRelayListener.of(listeners.orderedStream().toList());
            return new RelayLifecycle(() -> OutboxRelay.builder(dataSource, publisher).config(built).listener(listener)
                    .tracing(tracing).build());
        }
    }

}

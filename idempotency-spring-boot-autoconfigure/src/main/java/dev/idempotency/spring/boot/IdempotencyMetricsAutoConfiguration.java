package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.metrics.micrometer.MicrometerRelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Meters on the application's {@link MeterRegistry}: {@code idempotency.executor.calls} by outcome,
 * and, when the relay runs here, the relay's meters through {@link MicrometerRelayMetrics}
 * ({@code outbox.events.published}, {@code outbox.backlog.events}, ...), its gauges refreshed on
 * {@code idempotency.relay.metrics-refresh-interval}.
 */
@AutoConfiguration(before = IdempotencyAutoConfiguration.class, afterName = {
        // Spring Boot 4.x
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
        // Spring Boot 3.5
        "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, MicrometerRelayMetrics.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnProperty(prefix = "idempotency", name = "enabled", havingValue = "true", matchIfMissing = true)
public class IdempotencyMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MicrometerExecutorOutcomes idempotencyExecutorOutcomes(MeterRegistry registry) {
        return new MicrometerExecutorOutcomes(registry);
    }

    /** The relay's meters, when the relay runs in this application. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "idempotency.relay", name = "enabled", havingValue = "true")
    static class RelayMetricsConfiguration {

        @Bean
        @ConditionalOnMissingBean
        MicrometerRelayMetrics outboxRelayMetrics(MeterRegistry registry, DataSource dataSource,
                                                  IdempotencyProperties properties) {
            return MicrometerRelayMetrics.builder(registry)
                    .backlog(OutboxBacklog.builder(dataSource).schema(properties.schema()).build())
                    .deadLetters(OutboxDeadLetters.builder(dataSource).schema(properties.schema()).build())
                    .build();
        }

        @Bean
        RelayMetricsRefresher outboxRelayMetricsRefresher(MicrometerRelayMetrics metrics,
                                                          IdempotencyProperties properties) {
            return new RelayMetricsRefresher(metrics, properties.relay().metricsRefreshInterval());
        }
    }
}

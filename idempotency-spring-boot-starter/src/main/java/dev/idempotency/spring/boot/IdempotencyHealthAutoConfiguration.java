package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/** The relay's Actuator health indicator ({@code outboxRelay}), when the relay runs in this application. */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(RelayLifecycle.class)
public class IdempotencyHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "outboxRelayHealthIndicator")
    HealthIndicator outboxRelayHealthIndicator(RelayLifecycle relay, DataSource dataSource,
                                               IdempotencyProperties properties) {
        return new RelayHealthIndicator(relay,
                OutboxBacklog.builder(dataSource).schema(properties.schema()).build(),
                OutboxDeadLetters.builder(dataSource).schema(properties.schema()).build());
    }
}

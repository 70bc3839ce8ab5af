package dev.idempotency.spring.boot.actuate;

import dev.idempotency.spring.boot.IdempotencyAutoConfiguration;
import dev.idempotency.spring.boot.IdempotencyProperties;
import dev.idempotency.spring.boot.RelayHealth;
import dev.idempotency.spring.boot.RelayLifecycle;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * The relay's Actuator health indicator ({@code outboxRelay}) on Spring Boot 3.5, when the relay runs in
 * this application. The only auto-configuration this line's starter holds: the rest is
 * idempotency-spring-boot-autoconfigure's, shared by every line.
 */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(RelayLifecycle.class)
public class IdempotencyHealthAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "outboxRelayHealthIndicator")
    HealthIndicator outboxRelayHealthIndicator(RelayLifecycle relay, DataSource dataSource,
                                               IdempotencyProperties properties) {
        return new RelayHealthIndicator(new RelayHealth(relay, dataSource, properties.schema(), properties.relay().stallAfter()));
    }
}

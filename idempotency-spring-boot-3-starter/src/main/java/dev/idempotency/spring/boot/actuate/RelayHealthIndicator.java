package dev.idempotency.spring.boot.actuate;

import dev.idempotency.spring.boot.RelayHealth;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * The relay's health ({@link RelayHealth}) as spring-boot-actuator's health indicator: UP while the relay runs
 * and the outbox can be read, DOWN when it is not running or the database does not answer.
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
    private final RelayHealth health;

    RelayHealthIndicator(RelayHealth health) {
        super("outbox relay health check failed");
        this.health = health;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        (health.up() ? builder.up() : builder.down()).withDetails(health.details());
    }
}

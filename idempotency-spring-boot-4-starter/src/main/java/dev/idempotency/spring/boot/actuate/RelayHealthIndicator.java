package dev.idempotency.spring.boot.actuate;

import dev.idempotency.spring.boot.RelayHealth;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The relay's health ({@link RelayHealth}) as spring-boot-health's health indicator: UP while the relay runs,
 * the outbox can be read and the relay makes progress; DOWN when it is not running, is stalled or the
 * database does not answer.
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
    private final RelayHealth health;

    RelayHealthIndicator(RelayHealth health) {
        super("outbox relay health check failed");
        this.health = health;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        RelayHealth.Check check = health.check();
        (check.up() ? builder.up() : builder.down()).withDetails(check.details());
    }
}

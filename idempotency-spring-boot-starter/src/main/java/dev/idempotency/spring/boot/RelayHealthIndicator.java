package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import java.util.Optional;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The relay's health for Actuator: UP while it runs and the outbox can be read, with its instance
 * id, held partitions, pending events, the oldest pending event's age and the dead letters awaiting
 * an operator; DOWN when it is not running (stopped, or failed to start) or the database does not answer.
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
    private final RelayLifecycle relay;
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;

    RelayHealthIndicator(RelayLifecycle relay, OutboxBacklog backlog, OutboxDeadLetters deadLetters) {
        super("outbox relay health check failed");
        this.relay = relay;
        this.backlog = backlog;
        this.deadLetters = deadLetters;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        Optional<OutboxRelay> running = relay.relay();
        if (running.isEmpty()) {
            builder.down().withDetail("running", false);
            return;
        }
        builder.up()
                .withDetail("running", true)
                .withDetail("instanceId", running.get().instanceId())
                .withDetail("heldPartitions", running.get().heldPartitions().size())
                .withDetail("pendingEvents", backlog.pendingCount())
                .withDetail("oldestPendingAge", backlog.oldestPendingAge().toString())
                .withDetail("deadLetters", deadLetters.count());
    }
}

package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The relay's health, whatever Actuator's API: UP while it runs and the outbox can be read, with
 * its instance id, held partitions, pending events, the oldest pending event's age and the dead
 * letters awaiting an operator; DOWN when it is not running (stopped, or failed to start). Each
 * Spring Boot line's starter adapts it to its Actuator's {@code HealthIndicator}.
 */
public final class RelayHealth {
    private final RelayLifecycle relay;
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;

    /** The health of {@code relay}, reading the outbox in {@code schema} on {@code dataSource}. */
    public RelayHealth(RelayLifecycle relay, DataSource dataSource, String schema) {
        this.relay = relay;
        this.backlog = OutboxBacklog.builder(dataSource).schema(schema).build();
        this.deadLetters = OutboxDeadLetters.builder(dataSource).schema(schema).build();
    }

    /** True when the relay runs. */
    public boolean up() {
        return relay.relay().isPresent();
    }

    /**
     * The details to report: {@code running}, and while it runs {@code instanceId},
     * {@code heldPartitions}, {@code pendingEvents}, {@code oldestPendingAge} and {@code deadLetters}.
     *
     * @throws RuntimeException the database did not answer: the indicator reports DOWN with it
     */
    public Map<String, Object> details() {
        Optional<OutboxRelay> running = relay.relay();
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("running", running.isPresent());
        if (running.isPresent()) {
            details.put("instanceId", running.get().instanceId());
            details.put("heldPartitions", running.get().heldPartitions().size());
            details.put("pendingEvents", backlog.pendingCount());
            details.put("oldestPendingAge", backlog.oldestPendingAge().toString());
            details.put("deadLetters", deadLetters.count());
        }
        return details;
    }
}

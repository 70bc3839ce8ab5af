package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxStall;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The relay's health, whatever Actuator's API: UP while it runs, the outbox can be read and it makes
 * progress, with its instance id, held partitions, pending events, the oldest pending event's age, how
 * long that event has only aged and the dead letters awaiting an operator; DOWN when it is not running
 * (stopped, or failed to start) or stalled: the same event the oldest pending one for {@code stallAfter}
 * across checks ({@link OutboxStall}). Each Spring Boot line's starter adapts it to its Actuator's
 * {@code HealthIndicator}.
 */
public final class RelayHealth {
    /** One health check: the verdict and what explains it. */
    public record Check(boolean up, Map<String, Object> details) {
    }

    private final RelayLifecycle relay;
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;
    private final OutboxStall stall = new OutboxStall();
    private final Duration stallAfter;

    /**
     * The health of {@code relay}, reading the outbox in {@code schema} on {@code dataSource}; stalled
     * once the same event has stayed the oldest pending one for {@code stallAfter}.
     */
    public RelayHealth(RelayLifecycle relay, DataSource dataSource, String schema, Duration stallAfter) {
        this.relay = relay;
        this.backlog = OutboxBacklog.builder(dataSource).schema(schema).build();
        this.deadLetters = OutboxDeadLetters.builder(dataSource).schema(schema).build();
        this.stallAfter = stallAfter;
    }

    /**
     * Checks now: {@code running}, and while it runs {@code instanceId}, {@code heldPartitions},
     * {@code pendingEvents}, {@code oldestPendingAge}, {@code stalledFor}, {@code stalled} and
     * {@code deadLetters}.
     *
     * @throws RuntimeException the database did not answer: the indicator reports DOWN with it
     */
    public Check check() {
        Optional<OutboxRelay> running = relay.relay();
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("running", running.isPresent());
        if (running.isEmpty()) {
            return new Check(false, details);
        }
        Duration oldest = backlog.oldestPendingAge();
        stall.observe(oldest);
        Duration stalledFor = stall.stalledFor();
        boolean stalled = stalledFor.compareTo(stallAfter) >= 0;
        details.put("instanceId", running.get().instanceId());
        details.put("heldPartitions", running.get().heldPartitions().size());
        details.put("pendingEvents", backlog.pendingCount());
        details.put("oldestPendingAge", oldest.toString());
        details.put("stalledFor", stalledFor.toString());
        details.put("stalled", stalled);
        details.put("deadLetters", deadLetters.count());
        return new Check(!stalled, details);
    }
}

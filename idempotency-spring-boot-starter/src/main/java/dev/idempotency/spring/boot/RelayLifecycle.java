package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxRelay;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the outbox relay while the context runs. It starts after the web server, so the application
 * answers before the relay's first poll, and stops gracefully (finishing and marking its batch,
 * releasing its partitions) before the data source closes. The executor's commits wake it through
 * {@link #wakeUp()}. A relay starts once, so each start builds a new one.
 */
public final class RelayLifecycle implements SmartLifecycle {
    private final Supplier<OutboxRelay> relays;
    private volatile OutboxRelay relay;

    RelayLifecycle(Supplier<OutboxRelay> relays) {
        this.relays = relays;
    }

    @Override
    public synchronized void start() {
        if (relay == null) {
            OutboxRelay next = relays.get();
            next.start();
            relay = next;
        }
    }

    @Override
    public synchronized void stop() {
        OutboxRelay running = relay;
        if (running != null) {
            relay = null;
            running.stop();
        }
    }

    @Override
    public boolean isRunning() {
        return relay != null;
    }

    /** Ends the relay's idle wait, if it runs: committed events are claimed now. */
    public void wakeUp() {
        OutboxRelay running = relay;
        if (running != null) {
            running.wakeUp();
        }
    }

    /** The running relay, if any: its instance id and held partitions, for health and operators. */
    public Optional<OutboxRelay> relay() {
        return Optional.ofNullable(relay);
    }

    @Override
    public int getPhase() {
        // After the web server (which starts at DEFAULT_PHASE - 1024) and stopped before it.
        return SmartLifecycle.DEFAULT_PHASE - 512;
    }
}

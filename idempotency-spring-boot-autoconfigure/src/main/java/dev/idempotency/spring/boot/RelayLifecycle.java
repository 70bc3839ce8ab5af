package dev.idempotency.spring.boot;

import dev.idempotency.outbox.OutboxRelay;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the outbox relay while the context runs. It starts before the web server and stops after the
 * web server drained its requests, so the events of the last requests are published too; it stops
 * gracefully (finishing and marking its batch, releasing its partitions) before the data source closes. The executor's
 * commits wake it through
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
        // Below the web server's phases (DEFAULT_PHASE - 2048 to start and stop it, - 1024 for its
        // graceful shutdown): stopped only once no request can write events any more.
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}

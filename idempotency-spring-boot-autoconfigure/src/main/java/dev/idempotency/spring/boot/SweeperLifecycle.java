package dev.idempotency.spring.boot;

import dev.idempotency.jdbc.Sweeper;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the sweeper while the context runs: started after the context refreshed, closed (letting a
 * sweep under way finish its batch) when it closes. A stopped sweeper is rebuilt on the next start.
 */
final class SweeperLifecycle implements SmartLifecycle {
    private final Supplier<Sweeper> sweepers;
    private Sweeper sweeper;

    SweeperLifecycle(Supplier<Sweeper> sweepers) {
        this.sweepers = sweepers;
    }

    @Override
    public synchronized void start() {
        if (sweeper == null) {
            Sweeper next = sweepers.get();
            next.start();
            sweeper = next;
        }
    }

    @Override
    public synchronized void stop() {
        if (sweeper != null) {
            sweeper.close();
            sweeper = null;
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return sweeper != null;
    }
}

package dev.idempotency.spring.boot;

import dev.idempotency.outbox.metrics.micrometer.MicrometerRelayMetrics;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.springframework.context.SmartLifecycle;

/** Reads the relay's backlog and dead-letter gauges from the database on a schedule, so a scrape never waits on it. */
final class RelayMetricsRefresher implements SmartLifecycle {
    private final MicrometerRelayMetrics metrics;
    private final Duration interval;
    private ScheduledExecutorService scheduler;

    RelayMetricsRefresher(MicrometerRelayMetrics metrics, Duration interval) {
        this.metrics = metrics;
        this.interval = interval;
    }

    @Override
    public synchronized void start() {
        if (scheduler == null) {
            scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "outbox-relay-metrics");
                thread.setDaemon(true);
                return thread;
            });
            scheduler.scheduleWithFixedDelay(metrics::refresh, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public synchronized void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return scheduler != null;
    }
}

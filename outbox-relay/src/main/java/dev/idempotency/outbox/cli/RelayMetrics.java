package dev.idempotency.outbox.cli;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelayListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process's metrics in a Prometheus registry: counters and the commit-to-publish histogram fed
 * by the relay as it works, and gauges of the outbox's state refreshed by {@link #refresh()} (so a
 * scrape never waits on the database). No metric carries a tenant label.
 */
final class RelayMetrics implements OutboxRelayListener {
    private static final Logger log = LoggerFactory.getLogger(RelayMetrics.class);

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;
    private final Counter published;
    private final Counter failedAttempts;
    private final Counter deadLettered;
    private final Timer commitToPublish;
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong oldestPendingMillis = new AtomicLong();
    private final AtomicLong deadLetterCount = new AtomicLong();
    private volatile long lastRefreshNanos;

    RelayMetrics(OutboxBacklog backlog, OutboxDeadLetters deadLetters) {
        this.backlog = backlog;
        this.deadLetters = deadLetters;
        this.published = Counter.builder("outbox.events.published")
                .description("Events the broker acknowledged").register(registry);
        this.failedAttempts = Counter.builder("outbox.publish.failures")
                .description("Publish attempts that failed and will be retried").register(registry);
        this.deadLettered = Counter.builder("outbox.events.dead.lettered")
                .description("Events dead-lettered by this process").register(registry);
        this.commitToPublish = Timer.builder("outbox.commit.to.publish")
                .description("From the writing transaction's start to the broker's acknowledgement")
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
        Gauge.builder("outbox.backlog.events", pending, AtomicLong::get)
                .description("Pending events in the outbox").register(registry);
        Gauge.builder("outbox.oldest.pending.age.seconds", oldestPendingMillis, millis -> millis.get() / 1000.0)
                .description("Age of the oldest pending event").register(registry);
        Gauge.builder("outbox.dead.letters", deadLetterCount, AtomicLong::get)
                .description("Dead-lettered events awaiting an operator").register(registry);
    }

    @Override
    public void published(OutboxEvent event, Duration sinceCreated) {
        published.increment();
        commitToPublish.record(sinceCreated);
    }

    @Override
    public void publishFailed(OutboxEvent event, String error) {
        failedAttempts.increment();
    }

    @Override
    public void deadLettered(long eventId, String error) {
        deadLettered.increment();
    }

    /** Reads the outbox's state into the gauges; returns false if the database did not answer. */
    boolean refresh() {
        try {
            pending.set(backlog.pendingCount());
            oldestPendingMillis.set(backlog.oldestPendingAge().toMillis());
            deadLetterCount.set(deadLetters.count());
            lastRefreshNanos = System.nanoTime();
            return true;
        } catch (RuntimeException e) {
            log.warn("could not read the outbox's state for metrics: {}", e.getMessage());
            return false;
        }
    }

    /** True when the last successful refresh is more recent than {@code maxAge}. */
    boolean freshWithin(Duration maxAge) {
        long last = lastRefreshNanos;
        return last != 0 && System.nanoTime() - last < maxAge.toNanos();
    }

    /** The registry's current state in the Prometheus text format. */
    String scrape() {
        return registry.scrape();
    }
}

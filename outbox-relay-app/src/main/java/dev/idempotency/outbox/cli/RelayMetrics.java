package dev.idempotency.outbox.cli;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelayListener;
import dev.idempotency.outbox.metrics.micrometer.MicrometerRelayMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;

/**
 * The process's metrics: the library's {@link MicrometerRelayMetrics}, with its outbox gauges, in a
 * Prometheus registry that {@code /metrics} scrapes. No metric carries a tenant label.
 */
final class RelayMetrics {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final MicrometerRelayMetrics relay;

    RelayMetrics(OutboxBacklog backlog, OutboxDeadLetters deadLetters) {
        this.relay = MicrometerRelayMetrics.builder(registry).backlog(backlog).deadLetters(deadLetters).build();
    }

    /** What the relay tells as it works. */
    OutboxRelayListener listener() {
        return relay;
    }

    /** Reads the outbox's state into the gauges; returns false if the database did not answer. */
    boolean refresh() {
        return relay.refresh();
    }

    /** How long the same event has stayed the oldest pending one, only aging; zero while the relays progress. */
    Duration stalledFor() {
        return relay.stalledFor();
    }

    /** True when the last successful refresh is more recent than {@code maxAge}. */
    boolean freshWithin(Duration maxAge) {
        return relay.freshWithin(maxAge);
    }

    /** The registry's current state in the Prometheus text format. */
    String scrape() {
        return registry.scrape();
    }
}

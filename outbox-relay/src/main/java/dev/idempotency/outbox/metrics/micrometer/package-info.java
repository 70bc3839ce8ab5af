/**
 * {@link dev.idempotency.outbox.metrics.micrometer.MicrometerRelayMetrics}: the relay's metrics on any
 * Micrometer {@code MeterRegistry}. Micrometer is an optional dependency of outbox-relay; add
 * {@code io.micrometer:micrometer-core} (or your registry, which brings it) to use this package.
 */
package dev.idempotency.outbox.metrics.micrometer;

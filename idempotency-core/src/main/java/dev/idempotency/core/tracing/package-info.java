/**
 * Tracing across the outbox: {@link dev.idempotency.core.tracing.Tracing} chooses whether the
 * library's components store trace context with outbox events and emit OpenTelemetry spans.
 */
package dev.idempotency.core.tracing;

/**
 * The OpenTelemetry implementation of the library's tracing; the only package that imports
 * OpenTelemetry, loaded only when its API is on the classpath. <strong>Not API.</strong>
 */
package dev.idempotency.core.internal.tracing.otel;

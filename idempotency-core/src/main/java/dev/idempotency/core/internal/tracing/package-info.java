/**
 * The library's tracing behind one indirection: {@link dev.idempotency.core.internal.tracing.Traces}
 * with a no-op implementation and an OpenTelemetry one (sub-package {@code otel}, the only code that
 * imports OpenTelemetry, loaded only when its API is present). <strong>Not API.</strong>
 */
package dev.idempotency.core.internal.tracing;

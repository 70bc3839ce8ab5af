package dev.idempotency.core.tracing;

import java.util.Objects;
import java.util.Optional;

/**
 * Which tracing the executor, the consumer, the HTTP layer and the relay use; each takes one in its
 * builder and defaults to {@link #auto()}. The promise: with tracing off ({@link #disabled()}, or
 * {@link #auto()} without the OpenTelemetry API on the classpath) the library stores no trace
 * context, emits no span and loads no tracing class. With it on, an outbox event keeps the W3C
 * context ({@code traceparent}, {@code tracestate}) of the span current when it was published, the
 * relay sends it unchanged in the broker's headers, and the library's spans carry outcomes and
 * messaging attributes, never keys, tenants or payloads (they can carry personal data).
 */
public final class Tracing {
    private static final String OPEN_TELEMETRY = "io.opentelemetry.api.OpenTelemetry";
    private static final Tracing AUTO = new Tracing(true, null);
    private static final Tracing DISABLED = new Tracing(false, null);

    private final boolean enabled;
    private final Object openTelemetry;

    private Tracing(boolean enabled, Object openTelemetry) {
        this.enabled = enabled;
        this.openTelemetry = openTelemetry;
    }

    /**
     * OpenTelemetry when its API is on the classpath, else nothing: spans go to the instance
     * registered as {@code GlobalOpenTelemetry} (by the Java agent, or the SDK's
     * {@code buildAndRegisterGlobal()}) once there is one, and none are made before; the trace
     * context current at publish is stored either way. The default.
     */
    public static Tracing auto() {
        return AUTO;
    }

    /** No trace context stored, no span, no tracing class loaded, whatever the classpath holds. */
    public static Tracing disabled() {
        return DISABLED;
    }

    /**
     * Spans go to {@code openTelemetry}, an {@code io.opentelemetry.api.OpenTelemetry} (typed
     * {@code Object}, as HikariCP takes its metric registry, so that this class loads without the API):
     * for an application whose SDK is not the global one, such as Spring Boot's with Micrometer Tracing's
     * OpenTelemetry bridge (pass its {@code OpenTelemetry} bean).
     *
     * @throws IllegalArgumentException {@code openTelemetry} is not an {@code io.opentelemetry.api.OpenTelemetry}
     */
    public static Tracing openTelemetry(Object openTelemetry) {
        Objects.requireNonNull(openTelemetry, "openTelemetry");
        if (!implementsNamed(openTelemetry.getClass(), OPEN_TELEMETRY)) {
            throw new IllegalArgumentException("openTelemetry must be an " + OPEN_TELEMETRY + " (was "
                    + openTelemetry.getClass().getName() + ")");
        }
        return new Tracing(true, openTelemetry);
    }

    /** False only for {@link #disabled()}. */
    public boolean enabled() {
        return enabled;
    }

    /** The instance given to {@link #openTelemetry(Object)}; empty for {@link #auto()} and {@link #disabled()}. */
    public Optional<Object> openTelemetry() {
        return Optional.ofNullable(openTelemetry);
    }

    private static boolean implementsNamed(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getName().equals(name)) {
                return true;
            }
            for (Class<?> i : c.getInterfaces()) {
                if (implementsNamed(i, name)) {
                    return true;
                }
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return !enabled ? "Tracing.disabled()" : openTelemetry == null ? "Tracing.auto()" : "Tracing.openTelemetry(" + openTelemetry + ")";
    }
}

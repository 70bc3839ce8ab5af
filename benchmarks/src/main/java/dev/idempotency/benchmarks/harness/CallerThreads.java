package dev.idempotency.benchmarks.harness;

import java.util.Locale;

/**
 * What the callers of a closed-loop cell run on: a platform thread each, as in a thread-per-request
 * server, or a virtual thread each, as in one with virtual threads enabled (Spring Boot's
 * {@code spring.threads.virtual.enabled}, Java 21 and later).
 */
public enum CallerThreads {
    PLATFORM,
    VIRTUAL;

    /** The first Java release with virtual threads. */
    static final int VIRTUAL_SINCE = 21;

    /** {@code platform} or {@code virtual}, as the option names them. */
    static CallerThreads named(String name) {
        for (CallerThreads kind : values()) {
            if (kind.optionName().equals(name)) {
                return kind;
            }
        }
        throw new IllegalArgumentException("callerThreads must be platform or virtual (was '" + name + "')");
    }

    String optionName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** A daemon thread for {@code body}, named {@code name}, not yet started. */
    Thread unstarted(String name, Runnable body) {
        if (this == PLATFORM) {
            Thread thread = new Thread(body, name);
            thread.setDaemon(true);
            return thread;
        }
        // The benchmark is built for Java 17, which has no Thread.ofVirtual() to compile against.
        try {
            Class<?> builderType = Class.forName("java.lang.Thread$Builder");
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            builder = builderType.getMethod("name", String.class).invoke(builder, name);
            return (Thread) builderType.getMethod("unstarted", Runnable.class).invoke(builder, body);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("this Java (" + Runtime.version() + ") cannot start a virtual thread", e);
        }
    }
}

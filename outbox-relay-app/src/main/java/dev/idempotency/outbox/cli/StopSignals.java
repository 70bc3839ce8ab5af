package dev.idempotency.outbox.cli;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns SIGTERM and SIGINT into a graceful stop, so that the process exits 0 instead of the JVM's 143.
 * Only {@code sun.misc.Signal} can do that; it is reached by reflection because naming it draws an
 * "internal proprietary API" warning from javac and javadoc on every build.
 */
final class StopSignals {
    private static final Logger log = LoggerFactory.getLogger(StopSignals.class);

    private StopSignals() {
    }

    /** Runs {@code stop} on SIGTERM and on SIGINT; where a signal cannot be handled, the JVM's default applies. */
    static void onTermAndInt(Runnable stop) {
        handle("TERM", stop);
        handle("INT", stop);
    }

    private static void handle(String name, Runnable stop) {
        try {
            Class<?> signal = Class.forName("sun.misc.Signal");
            Class<?> handler = Class.forName("sun.misc.SignalHandler");
            Object onSignal = Proxy.newProxyInstance(StopSignals.class.getClassLoader(), new Class<?>[] {handler},
                    (proxy, method, args) -> answer(proxy, method, args, stop));
            signal.getMethod("handle", signal, handler).invoke(null, signal.getConstructor(String.class).newInstance(name), onSignal);
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.debug("signal {} cannot be handled here; the JVM's default applies", name);
        }
    }

    /** The handler's one method runs {@code stop}; Object's methods answer as an identity would. */
    private static Object answer(Object proxy, Method method, Object[] args, Runnable stop) {
        return switch (method.getName()) {
            case "handle" -> {
                stop.run();
                yield null;
            }
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> "StopSignals";
        };
    }
}

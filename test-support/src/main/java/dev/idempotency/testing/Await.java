package dev.idempotency.testing;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * The tests' one way to wait for what another thread, process or transaction does soon: poll a
 * condition until it holds, and fail naming what never happened. A test never sleeps on a guess that
 * the other side got there; where the other side is a backend waiting on a lock, {@link LockWaits}
 * gives the condition.
 */
public final class Await {
    /** How long {@link #until(String, Condition)} waits: far beyond what any condition needs on a loaded machine. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    private static final long POLL_MILLIS = 20;

    /** A condition to poll; it may throw, e.g. a query's {@link java.sql.SQLException}, which fails the wait. */
    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    private Await() {
    }

    /** Returns once {@code condition} holds, polling every 20 ms; fails after {@link #DEFAULT_TIMEOUT}. */
    public static void until(String what, Condition condition) {
        until(what, DEFAULT_TIMEOUT, condition);
    }

    /**
     * Returns once {@code condition} holds, polling every 20 ms.
     *
     * @throws AssertionError naming {@code what} when it does not hold within {@code timeout}, when the
     *         condition throws a checked exception (an unchecked one passes as it is), or when the waiting
     *         thread is interrupted (its flag is kept)
     */
    public static void until(String what, Duration timeout, Condition condition) {
        Objects.requireNonNull(what, "what");
        Objects.requireNonNull(condition, "condition");
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!holds(what, condition)) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for: " + what, e);
            }
        }
    }

    /**
     * Returns once at least {@code atLeast} live threads are parked (waiting, with or without a timeout)
     * inside method {@code method} of class {@code className} (binary name, e.g. {@code a.B$C}): the probe for
     * a wait inside this JVM, which leaves no trace in the database; fails after {@link #DEFAULT_TIMEOUT}.
     * Test classes run two at a time, so a thread of another class may count: where that matters, name the
     * thread with {@link #threadWaitingIn(String, String, String)}.
     */
    public static void threadsWaitingIn(String className, String method, int atLeast) {
        until(atLeast + " threads waiting in " + className + "." + method,
                () -> waitingIn(thread -> true, className, method) >= atLeast);
    }

    /** Returns once the live thread named {@code threadName} is parked inside {@code className.method}. */
    public static void threadWaitingIn(String threadName, String className, String method) {
        until("thread " + threadName + " waiting in " + className + "." + method,
                () -> waitingIn(thread -> thread.getName().equals(threadName), className, method) > 0);
    }

    private static long waitingIn(Predicate<Thread> which, String className, String method) {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(thread -> which.test(thread.getKey()))
                .filter(thread -> thread.getKey().getState() == Thread.State.WAITING
                        || thread.getKey().getState() == Thread.State.TIMED_WAITING)
                .filter(thread -> Arrays.stream(thread.getValue()).anyMatch(
                        frame -> frame.getClassName().equals(className) && frame.getMethodName().equals(method)))
                .count();
    }

    private static boolean holds(String what, Condition condition) {
        try {
            return condition.holds();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new AssertionError("could not check whether " + what + ": " + e, e);
        }
    }
}

package dev.idempotency.outbox;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * How the worker waits when there is nothing to publish: an adaptive poll interval that starts at
 * the minimum and doubles up to the maximum while polls keep finding nothing, cut short by
 * {@link #wakeUp()} (called after a commit that wrote outbox events, or when partitions change).
 */
final class IdleWait {
    private final long minNanos;
    private final long maxNanos;
    private final Semaphore signal = new Semaphore(0);
    private long nextNanos;

    IdleWait(Duration min, Duration max) {
        this.minNanos = min.toNanos();
        this.maxNanos = max.toNanos();
        this.nextNanos = minNanos;
    }

    /** Ends the current or next wait at once. Cheap enough to call after every commit. */
    void wakeUp() {
        if (signal.availablePermits() == 0) {
            signal.release();
        }
    }

    /** Work was found: the next idle wait starts again from the minimum. */
    void reset() {
        nextNanos = minNanos;
    }

    /** Waits for the current interval or a wake-up, then doubles the interval (a wake-up resets it). */
    void await() throws InterruptedException {
        boolean woken = signal.tryAcquire(nextNanos, TimeUnit.NANOSECONDS);
        signal.drainPermits();
        nextNanos = woken ? minNanos : Math.min(maxNanos, nextNanos * 2);
    }

    /** Waits the maximum interval (or until woken) after an error, without changing the interval. */
    void awaitAfterError() throws InterruptedException {
        signal.tryAcquire(maxNanos, TimeUnit.NANOSECONDS);
        signal.drainPermits();
    }
}

package dev.idempotency.outbox;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * How the worker waits between reads: when there is nothing to publish, an adaptive poll interval
 * that starts at the minimum and doubles up to the maximum while polls keep finding nothing, cut
 * short by {@link #wakeUp()} (called after a commit that wrote outbox events, or when partitions
 * change); after a read that caught up with a steady stream, the linger, which only {@link #stop()}
 * cuts short.
 */
final class IdleWait {
    private final long minNanos;
    private final long maxNanos;
    private final long lingerNanos;
    private final Semaphore signal = new Semaphore(0);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private long nextNanos;

    IdleWait(Duration min, Duration max, Duration linger) {
        this.minNanos = min.toNanos();
        this.maxNanos = max.toNanos();
        this.lingerNanos = linger.toNanos();
        this.nextNanos = minNanos;
    }

    /** Ends the current or next wait at once. Cheap enough to call after every commit. */
    void wakeUp() {
        if (signal.availablePermits() == 0) {
            signal.release();
        }
    }

    /** Ends every current and later wait at once: the relay is stopping. */
    void stop() {
        stopped.countDown();
        signal.release();
    }

    /**
     * Waits until the linger has passed since {@code readStartedNanos}. Commits signalled meanwhile
     * need no wake-up afterwards: they committed before the next read starts, which sees them.
     */
    void linger(long readStartedNanos) throws InterruptedException {
        long rest = readStartedNanos + lingerNanos - System.nanoTime();
        if (rest > 0) {
            stopped.await(rest, TimeUnit.NANOSECONDS);
        }
        signal.drainPermits();
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

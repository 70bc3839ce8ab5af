package dev.idempotency.outbox;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Whether the relays make progress, told from successive readings of the oldest pending event's age
 * ({@link OutboxBacklog#oldestPendingAge()}): while they publish, the oldest pending event changes or
 * none is pending. When the same event stays the oldest and only ages (relays stopped or fenced out,
 * a broker that stays down, an event that keeps failing, positions that no longer move), the outbox is
 * stalled for as long as it has been seen so, which health checks and gauges report. Thread-safe.
 */
public final class OutboxStall {
    /** Two readings within this of the same creation time are of the same event (ages are in milliseconds). */
    private static final long SAME_EVENT_MILLIS = 1_000;

    private final LongSupplier nanoClock;
    /** Creation time of the oldest pending event, on the nano clock; Long.MIN_VALUE while none is pending. */
    private long oldestCreatedNanos = Long.MIN_VALUE;
    private long seenSinceNanos;

    /** A tracker on the JVM's monotonic clock. */
    public OutboxStall() {
        this(System::nanoTime);
    }

    OutboxStall(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** Records a reading: the oldest pending event's age now, zero when none is pending. */
    public synchronized void observe(Duration oldestPendingAge) {
        long now = nanoClock.getAsLong();
        if (oldestPendingAge.isZero() || oldestPendingAge.isNegative()) {
            oldestCreatedNanos = Long.MIN_VALUE;
            return;
        }
        long created = now - oldestPendingAge.toNanos();
        if (oldestCreatedNanos == Long.MIN_VALUE
                || Math.abs(created - oldestCreatedNanos) > TimeUnit.MILLISECONDS.toNanos(SAME_EVENT_MILLIS)) {
            oldestCreatedNanos = created;
            seenSinceNanos = now;
        }
    }

    /** How long the same event has been seen as the oldest pending one; zero while none is pending or it changes. */
    public synchronized Duration stalledFor() {
        return oldestCreatedNanos == Long.MIN_VALUE ? Duration.ZERO : Duration.ofNanos(nanoClock.getAsLong() - seenSinceNanos);
    }
}

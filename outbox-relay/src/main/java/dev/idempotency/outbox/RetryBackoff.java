package dev.idempotency.outbox;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Delay before an event's next attempt: exponential in the attempts made (base, 2 base, 4 base ...
 * up to a maximum), with "equal jitter" (a random half of it added to the other half), so that events
 * that failed together do not all come back at the same instant.
 */
final class RetryBackoff {
    private final long baseMillis;
    private final long maxMillis;

    RetryBackoff(Duration base, Duration max) {
        this.baseMillis = base.toMillis();
        this.maxMillis = max.toMillis();
    }

    /** The delay after the {@code attempts}-th failed attempt (1 for the first), in milliseconds. */
    long delayMillis(int attempts) {
        long delay = ceiling(attempts);
        long half = delay / 2;
        return delay - half + ThreadLocalRandom.current().nextLong(half + 1);
    }

    /** The delay without jitter: base * 2^(attempts - 1), at most the maximum. */
    long ceiling(int attempts) {
        int doublings = Math.max(0, attempts - 1);
        if (doublings >= 62 || baseMillis > (maxMillis >> doublings)) {
            return maxMillis;
        }
        return baseMillis << doublings;
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RetryBackoffTest {
    private final RetryBackoff backoff = new RetryBackoff(Duration.ofMillis(100), Duration.ofSeconds(60));

    @Test
    void doublesWithEachAttemptUpToTheMaximum() {
        assertEquals(100, backoff.ceiling(1));
        assertEquals(200, backoff.ceiling(2));
        assertEquals(400, backoff.ceiling(3));
        assertEquals(51_200, backoff.ceiling(10));
        assertEquals(60_000, backoff.ceiling(11));
        assertEquals(60_000, backoff.ceiling(1000), "no overflow for large attempt counts");
    }

    @Test
    void jittersBetweenHalfAndAllOfTheDelay() {
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            long delay = backoff.delayMillis(4);
            assertTrue(delay >= 400 && delay <= 800, "delay " + delay);
            seen.add(delay);
        }
        assertTrue(seen.size() > 10, "delays vary: " + seen);
    }
}

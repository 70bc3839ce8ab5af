package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Stalled means the same event stays the oldest pending one and only ages; any progress resets it. */
class OutboxStallTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000_000L);
    private final OutboxStall stall = new OutboxStall(clock::get);

    private void after(Duration elapsed, Duration oldestAge) {
        clock.addAndGet(elapsed.toNanos());
        stall.observe(oldestAge);
    }

    @Test
    void theSameOldestEventAgingIsStalledForAsLongAsItWasSeen() {
        after(Duration.ZERO, Duration.ofSeconds(10));
        after(Duration.ofSeconds(30), Duration.ofSeconds(40));
        after(Duration.ofSeconds(30), Duration.ofMillis(70_300));

        assertEquals(Duration.ofSeconds(60), stall.stalledFor());
    }

    @Test
    void aNewOldestEventOrAnEmptyBacklogIsProgress() {
        after(Duration.ZERO, Duration.ofSeconds(10));
        after(Duration.ofSeconds(30), Duration.ofSeconds(12));
        assertEquals(Duration.ZERO, stall.stalledFor(), "another event is the oldest now");

        after(Duration.ofSeconds(30), Duration.ZERO);
        assertEquals(Duration.ZERO, stall.stalledFor(), "nothing pending");
    }
}

package dev.idempotency.spring.boot;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for what a background thread (the relay, a gauge refresher) does soon. */
public final class Eventually {
    private Eventually() {
    }

    /** Returns once {@code condition} holds; fails after 10 seconds. */
    public static void await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(20);
        }
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A custom publisher that never returns costs one thread, and is never called again while it hangs. */
@Timeout(30)
class TimeLimitedPublisherTest {

    @Test
    void aPublisherThatNeverReturnsHoldsOneThreadAndNoSecondCallStartsUntilItReturns() throws Exception {
        String threadName = "time-limited-test-" + System.nanoTime();
        HangingPublisher hanging = new HangingPublisher();
        TimeLimitedPublisher limited = new TimeLimitedPublisher(hanging, Duration.ofMillis(50), threadName);
        List<OutboxEvent> events = List.of(event(1), event(2));
        try {
            assertEquals(List.of(Status.RETRY, Status.RETRY), statuses(limited.publish(events)), "the call that timed out");
            for (int i = 0; i < 100; i++) {
                List<PublishResult> results = limited.publish(events);
                assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE), statuses(results));
                assertTrue(results.get(0).error().startsWith("an earlier publish call has not returned"), results.get(0).error());
                Thread.sleep(5); // time itself: 100 calls spread over half a second of the hang
            }
            assertEquals(1, hanging.calls.get(), "the hanging publisher was called once");
            assertEquals(1, threadsNamed(threadName), "one calling thread, however many calls timed out");

            hanging.release.countDown();
            // The stuck call returns on its own thread a moment after release: until then calls stay UNAVAILABLE.
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED), statuses(firstNotUnavailable(limited, events)));
            assertEquals(1, hanging.returned.get());
            assertEquals(2, hanging.calls.get());
            assertEquals(1, hanging.mostAtOnce.get(), "never two calls at once");
            assertEquals(1, threadsNamed(threadName));
        } finally {
            hanging.release.countDown();
            limited.shutdown();
        }
    }

    /** Hangs in its first call, deaf to interrupts, until released; later calls publish. */
    private static final class HangingPublisher implements Publisher {
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger returned = new AtomicInteger();
        final AtomicInteger running = new AtomicInteger();
        final AtomicInteger mostAtOnce = new AtomicInteger();

        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
            try {
                if (calls.incrementAndGet() == 1) {
                    while (release.getCount() > 0) {
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            // A publisher that never returns ignores interrupts too.
                        }
                    }
                    returned.incrementAndGet();
                }
                return events.stream().map(e -> PublishResult.published()).toList();
            } finally {
                running.decrementAndGet();
            }
        }

        @Override
        public void close() {
        }
    }

    private static long threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name) && t.isAlive()).count();
    }

    private static List<PublishResult> firstNotUnavailable(TimeLimitedPublisher limited, List<OutboxEvent> events) {
        AtomicReference<List<PublishResult>> results = new AtomicReference<>();
        Await.until("the publisher called again once it returned", Duration.ofSeconds(10), () -> {
            results.set(limited.publish(events));
            return results.get().get(0).status() != Status.UNAVAILABLE;
        });
        return results.get();
    }

    private static List<Status> statuses(List<PublishResult> results) {
        return results.stream().map(PublishResult::status).toList();
    }

    private static OutboxEvent event(long id) {
        return new OutboxEvent(id, "message-" + id, "t", "orders", "key-" + id, "{}", Map.of(), Instant.now(), 1);
    }
}

package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A test broker: acknowledges events into a {@link PublicationLog}, and can be switched "down"
 * (every event gets RETRY), made to fail or reject chosen events, held inside a call until the test
 * opens a gate, or slowed: then its acknowledgements come back late, and a call interrupted while
 * waiting for them reports RETRY for messages the broker already has, as after a crash.
 */
final class RecordingPublisher implements Publisher {
    private final String name;
    private final PublicationLog log;
    private final AtomicInteger calls = new AtomicInteger();
    private final Map<Long, OutboxEvent> received = new ConcurrentHashMap<>();
    private volatile boolean down;
    private volatile Predicate<OutboxEvent> failing = e -> false;
    private volatile Predicate<OutboxEvent> rejecting = e -> false;
    private volatile long delayMillis;
    private volatile CountDownLatch gate;
    private volatile CountDownLatch entered = new CountDownLatch(1);

    RecordingPublisher(String name, PublicationLog log) {
        this.name = name;
        this.log = log;
    }

    RecordingPublisher down(boolean down) {
        this.down = down;
        return this;
    }

    RecordingPublisher failing(Predicate<OutboxEvent> failing) {
        this.failing = failing;
        return this;
    }

    RecordingPublisher rejecting(Predicate<OutboxEvent> rejecting) {
        this.rejecting = rejecting;
        return this;
    }

    RecordingPublisher delayMillis(long delayMillis) {
        this.delayMillis = delayMillis;
        return this;
    }

    /** The next calls block inside publish until {@link #openGate()}. */
    RecordingPublisher closeGate() {
        entered = new CountDownLatch(1);
        gate = new CountDownLatch(1);
        return this;
    }

    void openGate() {
        CountDownLatch g = gate;
        gate = null;
        if (g != null) {
            g.countDown();
        }
    }

    /** Waits until a call is blocked at the closed gate. */
    boolean awaitBlocked(long seconds) throws InterruptedException {
        return entered.await(seconds, TimeUnit.SECONDS);
    }

    int calls() {
        return calls.get();
    }

    /** The last version of event {@code id} this publisher was handed, or null. */
    OutboxEvent received(long id) {
        return received.get(id);
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        calls.incrementAndGet();
        events.forEach(e -> received.put(e.id(), e));
        log.begin(events);
        try {
            CountDownLatch g = gate;
            if (g != null) {
                entered.countDown();
                g.await(30, TimeUnit.SECONDS);
            }
            List<PublishResult> results = new ArrayList<>(events.size());
            for (OutboxEvent event : events) {
                if (down) {
                    results.add(PublishResult.retry("broker down"));
                } else if (failing.test(event)) {
                    results.add(PublishResult.retry("injected failure of event " + event.id()));
                } else if (rejecting.test(event)) {
                    results.add(PublishResult.rejected("injected rejection of event " + event.id()));
                } else {
                    log.acknowledged(name, event);
                    results.add(PublishResult.published());
                }
            }
            if (delayMillis > 0) {
                // The broker has the messages; the acknowledgements take a while to come back.
                Thread.sleep(delayMillis);
            }
            return results;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return events.stream().map(e2 -> PublishResult.retry("interrupted before the acknowledgements")).toList();
        } finally {
            log.end(events);
        }
    }

    @Override
    public void close() {
    }
}

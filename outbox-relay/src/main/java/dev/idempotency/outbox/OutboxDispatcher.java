package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one batch: claims due events of the held partitions, publishes them in waves, then marks the
 * outcomes with one fenced statement each (published, failed, dead).
 *
 * <p>A wave holds at most one event per ordering key, so one publish call never carries two events
 * of a key, and a key's next event goes out only after the broker acknowledged the previous one. The
 * first event of a key that does not succeed (retry, rejection, undecodable, lease no longer safe)
 * ends that key for the batch: its later events stay pending behind it. Other keys go on.
 *
 * <p>An UNAVAILABLE result (the broker cannot be reached) is not an attempt: its event is left as it
 * was, the batch ends after that wave, and {@link PublisherOutage} makes the relay pause as a whole.
 */
final class OutboxDispatcher {
    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private final OutboxEventStore store;
    private final PartitionLeases leases;
    private final TimeLimitedPublisher publisher;
    private final RetryBackoff backoff;
    private final int maxAttempts;
    private final OutboxRelayListener listener;
    private final RelayFailureLog failures;
    private final PublisherOutage outage;

    OutboxDispatcher(OutboxEventStore store, PartitionLeases leases, TimeLimitedPublisher publisher,
                     OutboxRelayConfig config, OutboxRelayListener listener, PublisherOutage outage) {
        this.store = store;
        this.leases = leases;
        this.publisher = publisher;
        this.backoff = new RetryBackoff(config.backoffBase(), config.backoffMax());
        this.maxAttempts = config.maxAttempts();
        this.listener = listener;
        this.failures = new RelayFailureLog(config.instanceId());
        this.outage = outage;
    }

    /** Claims, publishes and marks one batch; returns how many events it claimed (0: nothing due). */
    int dispatchBatch() throws InterruptedException {
        List<ClaimedEvent> batch = store.claim(leases.publishable());
        if (batch.isEmpty()) {
            return 0;
        }
        Outcomes outcomes = new Outcomes();
        Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues = new LinkedHashMap<>();
        for (ClaimedEvent event : batch) {
            queues.computeIfAbsent(event.key(), k -> new ArrayDeque<>()).add(event);
        }
        try {
            List<ClaimedEvent> wave;
            // After a wave found the broker unavailable, the rest of the batch waits for the outage to end.
            while (!(wave = nextWave(queues, outcomes)).isEmpty() && publishWave(wave, queues, outcomes)) {
            }
        } finally {
            // Whatever happened, what the broker already acknowledged is marked.
            outcomes.mark();
        }
        return batch.size();
    }

    /** Heads of the remaining queues; a head that cannot be sent ends its key (dead-lettered or left pending). */
    private List<ClaimedEvent> nextWave(Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues, Outcomes outcomes) {
        List<ClaimedEvent> wave = new ArrayList<>();
        for (Iterator<Deque<ClaimedEvent>> it = queues.values().iterator(); it.hasNext(); ) {
            ClaimedEvent head = it.next().peek();
            if (!leases.canPublish(head.partition(), head.epoch())) {
                it.remove();
            } else if (!head.decoded()) {
                failures.deadLettered(head, head.attempts(), RelayFailureLog.DeadLetterCause.UNDECODABLE,
                        head.decodeError());
                outcomes.dead.add(new OutboxEventStore.DeadLetter(head, false, head.decodeError()));
                notifyDead(head.id(), head.decodeError());
                it.remove();
            } else {
                wave.add(head);
            }
        }
        return wave;
    }

    /** Publishes one wave and sorts its results; false when the broker was unavailable. */
    private boolean publishWave(List<ClaimedEvent> wave, Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues,
                                Outcomes outcomes) throws InterruptedException {
        List<PublishResult> results = publisher.publish(wave.stream().map(ClaimedEvent::event).toList());
        long now = System.nanoTime();
        String unavailable = null;
        for (int i = 0; i < wave.size(); i++) {
            ClaimedEvent event = wave.get(i);
            PublishResult result = results.get(i);
            Deque<ClaimedEvent> queue = queues.get(event.key());
            switch (result.status()) {
                case PUBLISHED -> {
                    outcomes.published.add(event);
                    notifyPublished(event, Duration.ofMillis(event.ageMillis()).plusNanos(now - event.claimedAtNanos()));
                    queue.poll();
                    if (queue.isEmpty()) {
                        queues.remove(event.key());
                    }
                }
                case RETRY -> {
                    int attempts = event.attempts() + 1;
                    if (attempts >= maxAttempts) {
                        String error = "gave up after " + attempts + " attempts: " + result.error();
                        outcomes.dead.add(new OutboxEventStore.DeadLetter(event, true, error));
                        failures.deadLettered(event, attempts, RelayFailureLog.DeadLetterCause.RETRIES_EXHAUSTED,
                                result.error());
                        notifyDead(event.id(), error);
                    } else {
                        outcomes.failed.add(new OutboxEventStore.FailedAttempt(event, backoff.delayMillis(attempts),
                                result.error()));
                        failures.publishFailed(event.event(), result);
                        notifyFailed(event.event(), result.error());
                    }
                    queues.remove(event.key());
                }
                case REJECTED -> {
                    String error = "rejected: " + result.error();
                    outcomes.dead.add(new OutboxEventStore.DeadLetter(event, true, error));
                    failures.deadLettered(event, event.attempts() + 1, RelayFailureLog.DeadLetterCause.REJECTED,
                            result.error());
                    notifyDead(event.id(), error);
                    queues.remove(event.key());
                }
                case UNAVAILABLE -> {
                    // Not an attempt: the event stays exactly as it was, first in its key.
                    unavailable = result.error();
                    queues.remove(event.key());
                }
            }
        }
        if (unavailable != null) {
            outage.unavailable(unavailable);
            return false;
        }
        outage.available();
        return true;
    }

    /** What a batch's waves produced, written at the end with one statement per kind. */
    private final class Outcomes {
        final List<ClaimedEvent> published = new ArrayList<>();
        final List<OutboxEventStore.FailedAttempt> failed = new ArrayList<>();
        final List<OutboxEventStore.DeadLetter> dead = new ArrayList<>();

        void mark() {
            Map<Integer, Long> fenced = new HashMap<>(store.markPublished(published));
            fenced.putAll(store.recordFailures(failed));
            fenced.putAll(store.deadLetter(dead));
            fenced.forEach(leases::drop);
            if (!fenced.isEmpty()) {
                log.warn("relay {} could not mark events of partitions {}: their leases were taken over or ran out;"
                        + " the new owner publishes those events again", leases.instanceId(), fenced.keySet());
            }
        }
    }

    private void notifyPublished(ClaimedEvent event, Duration sinceCreated) {
        try {
            listener.published(event.event(), sinceCreated);
        } catch (RuntimeException e) {
            log.warn("relay listener failed", e);
        }
    }

    private void notifyFailed(OutboxEvent event, String error) {
        try {
            listener.publishFailed(event, error);
        } catch (RuntimeException e) {
            log.warn("relay listener failed", e);
        }
    }

    private void notifyDead(long eventId, String error) {
        try {
            listener.deadLettered(eventId, error);
        } catch (RuntimeException e) {
            log.warn("relay listener failed", e);
        }
    }
}

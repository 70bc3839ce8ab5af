package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one cycle: first the due retries of the held partitions (outbox_retries), then one page of the
 * publish path (events by snapshot difference, see {@link OutboxPositions}); each is published in
 * waves, then settled with one fenced statement.
 *
 * <p>A wave holds at most one event per ordering key, so one publish call never carries two events
 * of a key, and a key's next event goes out only after the broker acknowledged the previous one. On
 * the publish path an event whose attempt fails goes to outbox_retries with its backoff, and so do
 * its key's later events (they follow it there, in id order), as do the events of a key that already
 * has a pending retry; other keys go on, and the page's position passes them all. A rejected, out of
 * attempts or undecodable event is dead-lettered and its key goes on.
 *
 * <p>With read-ahead on ({@link OutboxRelayConfig#readAhead()}, off by default), the page after the one
 * being published is read meanwhile ({@link NextPageReader}); it is taken next only if this page settled
 * whole under the same leases, and the keys this page moved to outbox_retries are held back in it,
 * since it was read before they got there.
 *
 * <p>An UNAVAILABLE result (the broker cannot be reached) is not an attempt: its event and the rest
 * of the page stay unsettled (the position stops before them), the cycle ends after that wave, and
 * {@link PublisherOutage} makes the relay pause as a whole. So does a lease no longer safe to publish
 * under, for that partition's events.
 */
final class OutboxDispatcher {
    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);
    /** Batches found read to their end in a row, each closed with a write, before a cycle gives way. */
    private static final int MAX_EMPTY_PAGES = 4;

    private final OutboxPositions positions;
    private final RetryQueue retries;
    private final PartitionLeases leases;
    private final TimeLimitedPublisher publisher;
    private final RetryBackoff backoff;
    private final int maxAttempts;
    private final OutboxRelayListener listener;
    private final RelayFailureLog failures;
    private final PublisherOutage outage;
    private final RelayStats stats;
    private final long retryScanIntervalNanos;
    private final long quietRetryScanIntervalNanos;
    private final NextPageReader nextPage;
    private final boolean readAhead;
    /** The keys the last page moved to outbox_retries: the page read ahead did not see them there yet. */
    private Set<ClaimedEvent.OrderingKey> movedAside = Set.of();
    private long nextRetryScan = System.nanoTime();
    private Map<Integer, Long> retryScanLeases = Map.of();
    private boolean caughtUp;

    OutboxDispatcher(OutboxPositions positions, RetryQueue retries, PartitionLeases leases,
                     TimeLimitedPublisher publisher, OutboxRelayConfig config, OutboxRelayListener listener,
                     PublisherOutage outage, RelayStats stats) {
        this.positions = positions;
        this.retries = retries;
        this.leases = leases;
        this.publisher = publisher;
        this.backoff = new RetryBackoff(config.backoffBase(), config.backoffMax());
        this.maxAttempts = config.maxAttempts();
        this.listener = listener;
        this.failures = new RelayFailureLog(config.instanceId());
        this.outage = outage;
        this.stats = stats;
        this.retryScanIntervalNanos = config.idlePollMin().toNanos();
        this.quietRetryScanIntervalNanos = config.idlePollMax().toNanos();
        this.nextPage = new NextPageReader(positions, config.instanceId());
        this.readAhead = config.readAhead();
    }

    /**
     * Publishes the due retries, then one page; returns how many events it read (0: nothing to do).
     * Retries are looked for at most every idlePollMin while some are pending but none due, and every
     * idlePollMax while none of this relay's partitions has any (only this relay adds them, and it looks
     * again at once when it moves events aside or its partitions change; a dead letter an operator
     * requeues waits at most that long).
     */
    int dispatchBatch() throws InterruptedException {
        caughtUp = false;
        int read = 0;
        List<ClaimedEvent> due = List.of();
        long now = System.nanoTime();
        Map<Integer, Long> publishable = leases.publishable();
        if (now - nextRetryScan >= 0 || !publishable.equals(retryScanLeases)) {
            due = retries.claim(publishable);
            retryScanLeases = publishable;
            nextRetryScan = !due.isEmpty() ? now
                    : now + (retries.nonePending() ? quietRetryScanIntervalNanos : retryScanIntervalNanos);
        }
        if (!due.isEmpty()) {
            read += due.size();
            Settlement outcomes = new Settlement();
            boolean reachable;
            try {
                reachable = publishInWaves(due, outcomes, false, Set.of());
            } finally {
                // Whatever happened, what the broker already acknowledged is recorded.
                dropFenced(retries.settle(outcomes));
            }
            if (!reachable) {
                nextPage.drop();
                return read;
            }
        }
        Map<Integer, Long> pageLeases = leases.publishable();
        // The page read ahead while the last one was published, if it still holds; else read now.
        OutboxPositions.Page page = nextPage.take(pageLeases);
        Set<ClaimedEvent.OrderingKey> heldBack = page != null ? movedAside : Set.of();
        movedAside = Set.of();
        if (page == null) {
            page = positions.read(pageLeases);
        }
        // A batch under way whose last page was full but had nothing after it: close it, read on.
        for (int i = 0; i < MAX_EMPTY_PAGES && page.events().isEmpty() && page.continuation(); i++) {
            settle(page, new Settlement());
            pageLeases = leases.publishable();
            page = positions.read(pageLeases);
            heldBack = Set.of(); // read after the page before settled: outbox_retries has its keys
        }
        // Read to the end of what was committed, with no retry due: nothing is waiting for the next read.
        caughtUp = due.isEmpty() && !page.full() && page.cuts().isEmpty();
        if (page.events().isEmpty()) {
            // The stream paused: the positions it moved in memory are written now, not after a crash's republication.
            writePositions();
            return read;
        }
        // With read-ahead, the next page is read while this one is published; it is settled after this one, if it holds.
        if (readAhead) {
            nextPage.readAfter(page, pageLeases);
        }
        Settlement outcomes = new Settlement();
        boolean reachable = false;
        try {
            reachable = publishInWaves(page.events(), outcomes, true, heldBack);
        } finally {
            nextPage.awaitRead();
            movedAside = movedAside(outcomes);
            settle(page, outcomes);
            if (!reachable) {
                // The broker is down (or the call failed): the relay pauses, and reads this page's rest again after.
                nextPage.drop();
            }
        }
        return read + page.events().size();
    }

    /** The keys of the events a page moved to outbox_retries as pending; their later events must follow them there. */
    private static Set<ClaimedEvent.OrderingKey> movedAside(Settlement outcomes) {
        if (outcomes.failed.isEmpty() && outcomes.diverted.isEmpty()) {
            return Set.of();
        }
        Set<ClaimedEvent.OrderingKey> keys = new HashSet<>();
        outcomes.failed.forEach(f -> keys.add(f.event().key()));
        outcomes.diverted.forEach(e -> keys.add(e.key()));
        return keys;
    }

    /** How many pages were published as read ahead while the page before them was published (for tests). */
    long pagesReadAhead() {
        return nextPage.taken();
    }

    /** Stops reading ahead (the relay stopped); what was read ahead is read again by the next owner. */
    void close() {
        nextPage.close();
    }

    /**
     * Whether the last {@link #dispatchBatch()} left nothing committed unread: no retry was due and its
     * page ended its batch (not full, no key cut off). Only then does the relay linger before reading again.
     */
    boolean caughtUp() {
        return caughtUp;
    }

    /**
     * Publishes events (in id order) in waves and sorts the results into {@code outcomes}; false when
     * the broker was unavailable. {@code publishPath}: held-back events and a failed event's followers
     * are diverted to outbox_retries; on the retry path they simply stay where they are. {@code heldBack}:
     * keys whose events are held back as well (publish path; the keys the page before moved aside).
     */
    private boolean publishInWaves(List<ClaimedEvent> events, Settlement outcomes, boolean publishPath,
                                   Set<ClaimedEvent.OrderingKey> heldBack) throws InterruptedException {
        Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues = new LinkedHashMap<>();
        Set<ClaimedEvent.OrderingKey> diverted = new HashSet<>(heldBack);
        for (ClaimedEvent event : events) {
            if (publishPath && (event.heldBack() || diverted.contains(event.key()))) {
                // Its key has a pending retry: it follows that retry, in id order.
                diverted.add(event.key());
                outcomes.diverted.add(event);
            } else {
                queues.computeIfAbsent(event.key(), k -> new ArrayDeque<>()).add(event);
            }
        }
        while (!queues.isEmpty()) {
            List<ClaimedEvent> wave = nextWave(queues, outcomes);
            if (!wave.isEmpty() && !publishWave(wave, queues, outcomes, publishPath)) {
                return false;
            }
        }
        return true;
    }

    /** Heads of the remaining queues; a head that cannot be sent is dead-lettered or ends its key (unsettled). */
    private List<ClaimedEvent> nextWave(Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues, Settlement outcomes) {
        List<ClaimedEvent> wave = new ArrayList<>();
        for (Iterator<Deque<ClaimedEvent>> it = queues.values().iterator(); it.hasNext(); ) {
            Deque<ClaimedEvent> queue = it.next();
            ClaimedEvent head = queue.peek();
            if (!leases.canPublish(head.partition(), head.epoch())) {
                it.remove();
            } else if (!head.decoded()) {
                failures.deadLettered(head, head.attempts(), RelayFailureLog.DeadLetterCause.UNDECODABLE,
                        head.decodeError());
                outcomes.dead.add(new Settlement.Dead(head, head.attempts(), head.decodeError()));
                notifyDead(head.id(), head.decodeError());
                queue.poll();
                if (queue.isEmpty()) {
                    it.remove();
                }
            } else {
                wave.add(head);
            }
        }
        return wave;
    }

    /** Publishes one wave and sorts its results; false when the broker was unavailable. */
    private boolean publishWave(List<ClaimedEvent> wave, Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues,
                                Settlement outcomes, boolean publishPath) throws InterruptedException {
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
                    Duration sinceCreated = Duration.ofMillis(event.ageMillis()).plusNanos(now - event.claimedAtNanos());
                    stats.published(sinceCreated);
                    notifyPublished(event, sinceCreated);
                    next(queues, event.key(), queue);
                }
                case RETRY -> {
                    int attempts = event.attempts() + 1;
                    if (attempts >= maxAttempts) {
                        String error = "gave up after " + attempts + " attempts: " + result.error();
                        outcomes.dead.add(new Settlement.Dead(event, attempts, error));
                        failures.deadLettered(event, attempts, RelayFailureLog.DeadLetterCause.RETRIES_EXHAUSTED,
                                result.error());
                        notifyDead(event.id(), error);
                        next(queues, event.key(), queue);
                    } else {
                        outcomes.failed.add(new Settlement.Failed(event, attempts, backoff.delayMillis(attempts),
                                result.error()));
                        failures.publishFailed(event.event(), result);
                        notifyFailed(event.event(), result.error());
                        queue.poll();
                        if (publishPath) {
                            // The key's later events follow it to outbox_retries, so the position goes on.
                            outcomes.diverted.addAll(queue);
                        }
                        queues.remove(event.key());
                    }
                }
                case REJECTED -> {
                    String error = "rejected: " + result.error();
                    outcomes.dead.add(new Settlement.Dead(event, event.attempts() + 1, error));
                    failures.deadLettered(event, event.attempts() + 1, RelayFailureLog.DeadLetterCause.REJECTED,
                            result.error());
                    notifyDead(event.id(), error);
                    next(queues, event.key(), queue);
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

    /** Its key's next event becomes the head for the next wave. */
    private static void next(Map<ClaimedEvent.OrderingKey, Deque<ClaimedEvent>> queues, ClaimedEvent.OrderingKey key,
                             Deque<ClaimedEvent> queue) {
        queue.poll();
        if (queue.isEmpty()) {
            queues.remove(key);
        }
    }

    /** Forgets partitions whose fenced write found the lease gone; the new owner reads their events again. */
    private void dropFenced(Map<Integer, Long> fenced) {
        fenced.forEach(leases::drop);
        if (!fenced.isEmpty()) {
            log.warn("relay {} could not record progress of partitions {}: their leases were taken over or ran out;"
                    + " the new owner publishes those events again", leases.instanceId(), fenced.keySet());
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

    /**
     * Writes the positions moved in memory and not yet written ({@link OutboxRelayConfig#positionWriteInterval()}):
     * when a read finds nothing, and before partitions are released or the relay stops, so that their next
     * owner goes on from there.
     */
    void writePositions() {
        dropFenced(leases.updatingPartitionRows(positions::flush));
    }

    /** Settles the page's positions; never at the same time as a lease renewal of this relay ({@link PartitionLeases}). */
    private void settle(OutboxPositions.Page page, Settlement outcomes) {
        dropFenced(leases.updatingPartitionRows(() -> positions.settle(page, outcomes)));
        long soon = System.nanoTime() + retryScanIntervalNanos;
        if ((!outcomes.failed.isEmpty() || !outcomes.diverted.isEmpty()) && nextRetryScan - soon > 0) {
            // Events went to outbox_retries as pending: look for them at the usual pace again.
            nextRetryScan = soon;
        }
    }

}

package dev.idempotency.outbox;

import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls a {@link Publisher} on one thread of its own so that the relay always gets one result per
 * event within the call bound: a call that throws or answers with the wrong number of results
 * yields RETRY for its events; a call that outlasts the bound yields RETRY and is interrupted.
 *
 * <p>A call that outlasts the bound is never overlapped: until it returns, every further call
 * answers UNAVAILABLE at once without reaching the publisher, so the relay pauses as for a broker
 * outage. That keeps one thread however often a publisher hangs, and no two calls on one publisher.
 *
 * <p>With tracing on, each call is the relay's send span ({@link Traces#startSend}), failed when any event
 * was not published, with the first such status as its {@code error.type}.
 */
final class TimeLimitedPublisher {
    private static final Logger log = LoggerFactory.getLogger(TimeLimitedPublisher.class);

    private final Publisher publisher;
    private final long timeoutNanos;
    private final ThreadPoolExecutor caller;
    private final Traces traces;
    // Whether a call overran; it has returned once the thread is idle (a cancelled Future is "done" at once).
    private boolean overran;
    private long overrunSince;

    /** Without send spans. */
    TimeLimitedPublisher(Publisher publisher, Duration timeout, String threadName) {
        this(publisher, timeout, threadName, Traces.none());
    }

    TimeLimitedPublisher(Publisher publisher, Duration timeout, String threadName, Traces traces) {
        this.publisher = publisher;
        this.traces = traces;
        this.timeoutNanos = timeout.toNanos();
        this.caller = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread thread = new Thread(r, threadName);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** One result per event, in order; never throws except when the calling thread is interrupted. */
    List<PublishResult> publish(List<OutboxEvent> events) throws InterruptedException {
        if (traces == Traces.none()) {
            return publishBounded(events);
        }
        try (TracedSpan span = traces.startSend(publisher.messagingSystem(), events)) {
            List<PublishResult> results = publishBounded(events);
            results.stream().filter(result -> result.status() != PublishResult.Status.PUBLISHED).findFirst()
                    .ifPresent(failed -> span.error(failed.status().name().toLowerCase(java.util.Locale.ROOT)));
            return results;
        }
    }

    private List<PublishResult> publishBounded(List<OutboxEvent> events) throws InterruptedException {
        if (overran) {
            if (caller.getActiveCount() > 0) {
                return all(events, PublishResult.unavailable("an earlier publish call has not returned for "
                        + Duration.ofNanos(System.nanoTime() - overrunSince).toMillis() + " ms"));
            }
            log.info("the publish call that outlasted {} returned after about {} ms; calling the publisher again",
                    Duration.ofNanos(timeoutNanos), Duration.ofNanos(System.nanoTime() - overrunSince).toMillis());
            overran = false;
        }
        long start = System.nanoTime();
        Future<List<PublishResult>> call = caller.submit(() -> publisher.publish(events));
        List<PublishResult> results;
        try {
            results = call.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            overran = true;
            overrunSince = start;
            log.warn("publisher {} did not return within {}; no further call starts until it does",
                    publisher.getClass().getName(), Duration.ofNanos(timeoutNanos));
            return all(events, PublishResult.retry("publish call timed out after " + Duration.ofNanos(timeoutNanos)));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            log.warn("publisher {} threw instead of returning results", publisher.getClass().getName(), cause);
            return all(events, PublishResult.retry("publisher threw " + cause));
        } catch (InterruptedException e) {
            call.cancel(true);
            throw e;
        }
        if (results == null || results.size() != events.size() || results.stream().anyMatch(Objects::isNull)) {
            String error = "publisher returned " + (results == null ? "null" : results.size() + " results")
                    + " for " + events.size() + " events";
            log.warn(error);
            return all(events, PublishResult.retry(error));
        }
        return results;
    }

    /** Stops the calling thread; the publisher itself belongs to the caller and stays open. */
    void shutdown() {
        caller.shutdownNow();
    }

    private static List<PublishResult> all(List<OutboxEvent> events, PublishResult result) {
        return Collections.nCopies(events.size(), result);
    }
}

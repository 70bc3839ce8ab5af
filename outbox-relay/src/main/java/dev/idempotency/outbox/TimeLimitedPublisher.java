package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls a {@link Publisher} so that the relay always gets one result per event within the publish
 * timeout: a call that throws, answers with the wrong number of results, or outlasts the timeout
 * yields RETRY for its events. A call that outlasts the timeout is interrupted and abandoned on its
 * own thread (the relay's lease arithmetic assumes no call lasts longer).
 */
final class TimeLimitedPublisher {
    private static final Logger log = LoggerFactory.getLogger(TimeLimitedPublisher.class);

    private final Publisher publisher;
    private final long timeoutNanos;
    private final String threadName;
    private ExecutorService caller;

    TimeLimitedPublisher(Publisher publisher, Duration timeout, String threadName) {
        this.publisher = publisher;
        this.timeoutNanos = timeout.toNanos();
        this.threadName = threadName;
        this.caller = newCaller();
    }

    /** One result per event, in order; never throws except when the calling thread is interrupted. */
    List<PublishResult> publish(List<OutboxEvent> events) throws InterruptedException {
        Future<List<PublishResult>> call = caller.submit(() -> publisher.publish(events));
        List<PublishResult> results;
        try {
            results = call.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            // The stuck call keeps its thread; later calls get a fresh one.
            caller.shutdownNow();
            caller = newCaller();
            return all(events, "publish call timed out after " + Duration.ofNanos(timeoutNanos));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            log.warn("publisher {} threw instead of returning results", publisher.getClass().getName(), cause);
            return all(events, "publisher threw " + cause);
        } catch (InterruptedException e) {
            call.cancel(true);
            throw e;
        }
        if (results == null || results.size() != events.size() || results.stream().anyMatch(Objects::isNull)) {
            String error = "publisher returned " + (results == null ? "null" : results.size() + " results")
                    + " for " + events.size() + " events";
            log.warn(error);
            return all(events, error);
        }
        return results;
    }

    /** Stops the calling thread; the publisher itself belongs to the caller and stays open. */
    void shutdown() {
        caller.shutdownNow();
    }

    private static List<PublishResult> all(List<OutboxEvent> events, String error) {
        return Collections.nCopies(events.size(), PublishResult.retry(error));
    }

    private ExecutorService newCaller() {
        return Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, threadName);
            thread.setDaemon(true);
            return thread;
        });
    }
}

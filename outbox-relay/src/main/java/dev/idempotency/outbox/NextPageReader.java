package dev.idempotency.outbox;

import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the publish path's next page on a thread of its own while the worker publishes the current one,
 * so that the broker does not wait for PostgreSQL between pages. At most one page ahead, planned by
 * {@link OutboxPositions#planAfter} from the positions the current page leaves when all of it settles,
 * and taken by {@link OutboxPositions#take} only if that is what happened; otherwise it is dropped and
 * read again. The worker waits for the read to end before its own next statement ({@link #awaitRead()}),
 * so the two never hold a connection each at the same time.
 *
 * <p>Used by the worker thread only (the reading thread runs {@link OutboxPositions#fetch} alone).
 */
final class NextPageReader {
    private static final Logger log = LoggerFactory.getLogger(NextPageReader.class);

    private final OutboxPositions positions;
    private final String instanceId;
    private final ThreadPoolExecutor reader;
    private OutboxPositions.ReadAhead plan;
    private Future<OutboxPositions.Fetched> fetching;
    private volatile long pagesTaken;

    NextPageReader(OutboxPositions positions, String instanceId) {
        this.positions = positions;
        this.instanceId = instanceId;
        // One thread, started at the first read ahead; a relay that keeps up never starts it.
        this.reader = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread thread = new Thread(r, "outbox-relay-reader-" + instanceId);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Starts reading the page after {@code page} (read under {@code leases}), if there is one to plan. */
    void readAfter(OutboxPositions.Page page, Map<Integer, Long> leases) {
        drop();
        OutboxPositions.ReadAhead next = positions.planAfter(page, leases);
        if (next != null) {
            plan = next;
            fetching = reader.submit(() -> positions.fetch(next));
        }
    }

    /** Waits until the read under way, if any, has ended (whatever its outcome). */
    void awaitRead() {
        if (fetching == null) {
            return;
        }
        try {
            fetching.get();
        } catch (ExecutionException e) {
            // Dropped when taken; the worker's own read meets the same failure, if it lasts, and handles it.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The page read ahead, if one was read and still holds under these leases (see
     * {@link OutboxPositions#take}); else null, and the worker reads the next page itself. Either way
     * nothing stays read ahead.
     */
    OutboxPositions.Page take(Map<Integer, Long> leases) throws InterruptedException {
        if (fetching == null) {
            return null;
        }
        OutboxPositions.ReadAhead taken = plan;
        Future<OutboxPositions.Fetched> fetched = fetching;
        plan = null;
        fetching = null;
        OutboxPositions.Page page;
        try {
            page = positions.take(taken, fetched.get(), leases);
        } catch (ExecutionException e) {
            log.debug("relay {}: the page read ahead failed; reading it again", instanceId, e.getCause());
            return null;
        }
        if (page == null) {
            log.debug("relay {}: the page read ahead no longer holds (positions or leases moved); reading it again",
                    instanceId);
        } else {
            pagesTaken++;
        }
        return page;
    }

    /** How many pages were published as read ahead (for tests). */
    long taken() {
        return pagesTaken;
    }

    /** Forgets what was read ahead (it is read again when needed), once its read has ended. */
    void drop() {
        awaitRead();
        plan = null;
        fetching = null;
    }

    /** Stops the reading thread; a read in flight ends within the statement timeout. */
    void close() {
        plan = null;
        fetching = null;
        reader.shutdownNow();
    }
}

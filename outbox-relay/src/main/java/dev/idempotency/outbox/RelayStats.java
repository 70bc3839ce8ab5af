package dev.idempotency.outbox;

import dev.idempotency.jdbc.internal.RedactedErrors;
import java.time.Duration;
import java.util.Arrays;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this relay published, for the console of any process: counted in memory by the worker as the
 * broker acknowledges events, and written to outbox_relay_stats (V10) by the lease thread at most once
 * per {@link #FLUSH_INTERVAL}, in one statement ({@link RelaySql}'s RECORD_STATS), so publishing never
 * waits for it. A flush that fails is logged and its counts dropped, never retried. On a schema before
 * V10 it counts nothing.
 */
final class RelayStats {
    private static final Logger log = LoggerFactory.getLogger(RelayStats.class);
    /** The bucket width of V10's outbox_relay_stats_bucket: about one flush per bucket. */
    static final Duration FLUSH_INTERVAL = Duration.ofSeconds(10);

    private final Jdbi jdbi;
    private final RelaySql sql;
    private final String instanceId;
    /** Upper bounds of the histogram's buckets (ms), from V10; null while not recording. */
    private volatile long[] bounds;
    private long published;
    private long maxMillis;
    private long[] counts;
    private long lastFlushNanos;

    RelayStats(Jdbi jdbi, RelaySql sql, String instanceId) {
        this.jdbi = jdbi;
        this.sql = sql;
        this.instanceId = instanceId;
    }

    /** Starts counting when the schema has V10's table ({@code migrated}), reading its bucket bounds; else says so once. */
    void start(boolean migrated, String schema) {
        if (!migrated) {
            log.info("relay {}: schema '{}' predates migration V10, so this relay records no publish statistics for"
                    + " the console (it publishes as before); apply the library's migrations to record them",
                    instanceId, schema);
            return;
        }
        long[] loaded;
        try {
            Long[] read = jdbi.withHandle(h -> h.createQuery(sql.latencyBounds).mapTo(Long[].class).one());
            loaded = Arrays.stream(read).mapToLong(Long::longValue).toArray();
        } catch (RuntimeException e) {
            // Statistics are for the console: a relay that cannot keep them still publishes.
            log.warn("relay {} could not read the latency buckets of migration V10 and records no publish statistics: {}",
                    instanceId, RedactedErrors.describe(e));
            return;
        }
        synchronized (this) {
            counts = new long[loaded.length + 1];
            lastFlushNanos = System.nanoTime();
        }
        bounds = loaded;
    }

    /** The broker acknowledged an event {@code latency} after its writing transaction began. Quick: no I/O. */
    void published(Duration latency) {
        long[] b = bounds;
        if (b == null) {
            return;
        }
        long millis = latency.toMillis();
        int bucket = Arrays.binarySearch(b, millis);
        bucket = bucket >= 0 ? bucket : -bucket - 1;
        synchronized (this) {
            published++;
            maxMillis = Math.max(maxMillis, millis);
            counts[bucket]++;
        }
    }

    /** Flushes when {@link #FLUSH_INTERVAL} has passed since the last flush. Never throws. */
    void flushIfDue() {
        boolean due;
        synchronized (this) {
            due = bounds != null && System.nanoTime() - lastFlushNanos >= FLUSH_INTERVAL.toNanos();
        }
        if (due) {
            flush();
        }
    }

    /** Writes what was counted since the last flush, if anything, and starts counting afresh. Never throws. */
    void flush() {
        long events;
        long max;
        long[] histogram;
        long countedMillis;
        synchronized (this) {
            if (bounds == null) {
                return;
            }
            long now = System.nanoTime();
            countedMillis = (now - lastFlushNanos) / 1_000_000;
            lastFlushNanos = now;
            if (published == 0) {
                return;
            }
            events = published;
            max = maxMillis;
            histogram = counts;
            published = 0;
            maxMillis = 0;
            counts = new long[histogram.length];
        }
        try {
            jdbi.useHandle(h -> h.createUpdate(sql.recordStats).bind("instance", instanceId)
                    .bind("countedMillis", countedMillis).bind("published", events)
                    .bind("maxMillis", max).bindByType("buckets", Arrays.stream(histogram).boxed().toList(), BoundArrays.BIGINTS)
                    .execute());
        } catch (RuntimeException e) {
            log.warn("relay {} could not record its publish statistics; the {} events it counted since its last flush"
                    + " are left out of outbox_relay_stats: {}", instanceId, events, RedactedErrors.describe(e));
        }
    }
}

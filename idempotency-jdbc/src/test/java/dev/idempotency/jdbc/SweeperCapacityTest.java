package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The sweeper keeps up with the relay: one sweep at the defaults purges far more than three relays
 * publish in one interval, and closing a sweeper stops a long sweep at once instead of letting it run on.
 */
@Timeout(60)
class SweeperCapacityTest {
    /** Three relays' drain rate on this project's 2-core machine (README, benchmarks section 5), rounded up. */
    private static final long RELAY_EVENTS_PER_SECOND = 19_200;

    @RegisterExtension
    final ExecutorFixture db = new ExecutorFixture(2);

    @Test
    void oneSweepAtTheDefaultsPurgesMoreThanThreeRelaysPublishBetweenTwoSweeps() {
        long perSweep = (long) Sweeper.DEFAULT_BATCH_SIZE * Sweeper.DEFAULT_MAX_BATCHES_PER_SWEEP;
        long publishedPerInterval = RELAY_EVENTS_PER_SECOND * Sweeper.DEFAULT_INTERVAL.toSeconds();
        assertTrue(perSweep >= 2 * publishedPerInterval,
                "one sweep purges at most " + perSweep + " rows; three relays publish " + publishedPerInterval + " per interval");

        // More than the old cap of 100 batches of 1,000: all of it goes in one sweep now.
        insertPublishedEvents(150_000, "now() - interval '25 hours'");
        insertPublishedEvents(10, "now() - interval '1 hour'");

        Sweeper.Result result = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build().sweepOnce();

        assertEquals(150_000, result.eventsPurged());
        assertEquals(10, countEvents(), "events inside their retention stay");
    }

    @Test
    void closingAStartedSweeperStopsASweepUnderWayAfterItsCurrentBatch() throws Exception {
        insertPublishedEvents(20_000, "now() - interval '25 hours'");
        Sweeper sweeper = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name())
                .batchSize(1).maxBatchesPerSweep(100_000).interval(Duration.ofMillis(10)).build();
        sweeper.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (countEvents() > 19_900 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }

        long closing = System.nanoTime();
        sweeper.close();
        long closeMillis = (System.nanoTime() - closing) / 1_000_000;
        long leftAtClose = countEvents();
        Thread.sleep(300);

        assertTrue(closeMillis < 2_000, "close() waited " + closeMillis + " ms for a sweep of single-row batches");
        assertTrue(leftAtClose > 0, "the sweep ran to the end instead of stopping");
        assertEquals(leftAtClose, countEvents(), "nothing is purged after close() returned");
    }

    private void insertPublishedEvents(int count, String publishedAt) {
        db.schema.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, status, published_at) "
                + "SELECT 't1', 'payments', 'p' || (g % 100), '{}', 'published', " + publishedAt
                + " FROM generate_series(1, " + count + ") g");
    }

    private long countEvents() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM outbox_events").mapTo(Long.class).one());
    }
}

package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.testing.Await;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The sweeper keeps up whatever the volume: one rotation removes a whole generation of events,
 * however many, and closing a sweeper stops a long sweep of keys at once instead of letting it run on.
 */
@Timeout(60)
class SweeperCapacityTest {
    @RegisterExtension
    final ExecutorFixture db = new ExecutorFixture(2);

    @Test
    void oneSweepAtTheDefaultsRemovesAWholeGenerationOfEventsHoweverLarge() {
        // The row-by-row purge this replaced took 30 deletes of a batch for these; a rotation is one TRUNCATE.
        db.insertEvents(1, 150_000);
        db.insertEvents(0, 10);
        db.relaysConsumedEverything(32);
        db.lastRotatedAgo("13 hours");

        Sweeper.Result result = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build().sweepOnce();

        assertEquals(150_000, result.eventsPurged());
        assertEquals(10, countEvents(), "events of the generation writers just left stay");
    }

    @Test
    void closingAStartedSweeperStopsASweepUnderWayAfterItsCurrentBatch() throws Exception {
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at) "
                + "SELECT 't1', 'k' || g, 'completed', '1', now() - interval '1 minute' FROM generate_series(1, 20000) g");
        Sweeper sweeper = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name())
                .batchSize(1).maxBatchesPerSweep(100_000).interval(Duration.ofMillis(10)).build();
        sweeper.start();
        Await.until("the sweep under way", () -> countKeys() <= 19_900);

        long closing = System.nanoTime();
        sweeper.close();
        long closeMillis = (System.nanoTime() - closing) / 1_000_000;
        long leftAtClose = countKeys();
        Thread.sleep(300); // time itself: a sweep left running would purge more within it

        assertTrue(closeMillis < 2_000, "close() waited " + closeMillis + " ms for a sweep of single-row batches");
        assertTrue(leftAtClose > 0, "the sweep ran to the end instead of stopping");
        assertEquals(leftAtClose, countKeys(), "nothing is purged after close() returned");
    }

    private long countEvents() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM outbox_events").mapTo(Long.class).one());
    }

    private long countKeys() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM idempotency_keys").mapTo(Long.class).one());
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class SweeperTest {
    @RegisterExtension
    final ExecutorFixture db = new ExecutorFixture(6);

    private Sweeper.Builder sweeper() {
        return Sweeper.builder(db.schema.dataSource()).schema(db.schema.name());
    }

    @Test
    void aLeaseThatRanOutBecomesAFailureThatRetriesSeeInsteadOfRunningAgain() {
        String stale = newKey();
        String live = newKey();
        insertKey(stale, "processing", "now() - interval '1 second'", "now() + interval '1 hour'");
        insertKey(live, "processing", "now() + interval '1 hour'", "now() + interval '1 hour'");
        PostgresIdempotentExecutor executor = db.executor();

        assertThrows(KeyInProgressException.class, () -> executor.run(stale, "t1", tx -> "never"));
        Sweeper.Result result = sweeper().build().sweepOnce();

        assertEquals(1, result.leasesFailed());
        BusinessFailure replay = assertThrows(BusinessFailure.class, () -> executor.run(stale, "t1", tx -> "never"));
        assertEquals("lease_expired", replay.code());
        assertTrue(replay.getMessage().contains("unknown"), replay.getMessage());
        assertTrue(replay.details().containsKey("lease_expired_at"));
        assertEquals("processing", db.keyRow(live, "t1").get("status"));
    }

    @Test
    void expiredKeysArePurgedInBoundedBatchesAndLiveOnesStay() {
        for (int i = 0; i < 35; i++) {
            insertKey("expired-" + i, "completed", null, "now() - interval '1 minute'");
        }
        for (int i = 0; i < 5; i++) {
            insertKey("live-" + i, "completed", null, "now() + interval '1 hour'");
        }
        // Past retention but under a live lease: the work is still running, so the key stays.
        insertKey("leased", "processing", "now() + interval '1 hour'", "now() - interval '1 minute'");
        Sweeper sweeper = sweeper().batchSize(10).maxBatchesPerSweep(2).build();

        assertEquals(20, sweeper.sweepOnce().keysPurged());
        assertEquals(15, sweeper.sweepOnce().keysPurged());
        assertEquals(0, sweeper.sweepOnce().keysPurged());

        assertEquals(6, countKeys());
    }

    @Test
    void twoSweepersSideBySideShareTheWorkWithoutErrorsOrDoubleCounting() throws Exception {
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at) "
                + "SELECT 't1', 'k' || g, 'completed', '1', now() - interval '1 minute' FROM generate_series(1, 2000) g");
        Sweeper first = sweeper().batchSize(50).build();
        Sweeper second = sweeper().batchSize(50).build();

        CompletableFuture<Integer> a = CompletableFuture.supplyAsync(() -> sweepUntilIdle(first));
        CompletableFuture<Integer> b = CompletableFuture.supplyAsync(() -> sweepUntilIdle(second));
        int purged = a.get(30, TimeUnit.SECONDS) + b.get(30, TimeUnit.SECONDS);

        assertEquals(2000, purged);
        assertEquals(0, countKeys());
    }

    @Test
    void aStartedSweeperSweepsOnItsOwnUntilClosed() throws Exception {
        insertKey("expired", "completed", null, "now() - interval '1 minute'");

        try (Sweeper sweeper = sweeper().interval(Duration.ofMillis(50)).build()) {
            sweeper.start();
            Await.until("the expired key swept", () -> countKeys() == 0);
        }

        assertEquals(0, countKeys());
    }

    @Test
    void invalidSettingsFailAtBuildNamingTheSetting() {
        IllegalArgumentException schema = assertThrows(IllegalArgumentException.class, () -> sweeper().schema("a-b").build());
        IllegalArgumentException batch = assertThrows(IllegalArgumentException.class, () -> sweeper().batchSize(0).build());
        IllegalArgumentException retention = assertThrows(IllegalArgumentException.class,
                () -> sweeper().publishedEventRetention(Duration.ofSeconds(-1)).build());

        assertTrue(schema.getMessage().startsWith("schema "));
        assertTrue(batch.getMessage().startsWith("batchSize "));
        assertTrue(retention.getMessage().startsWith("publishedEventRetention "));
    }

    /** A sweep may stop early when the other sweeper holds the rows it skipped; sweep again until idle. */
    private static int sweepUntilIdle(Sweeper sweeper) {
        int total = 0;
        for (int purged = sweeper.sweepOnce().keysPurged(); purged > 0; purged = sweeper.sweepOnce().keysPurged()) {
            total += purged;
        }
        return total;
    }

    private void insertKey(String key, String status, String leaseExpiresAt, String expiresAt) {
        String lease = leaseExpiresAt == null ? "NULL, NULL" : "1, " + leaseExpiresAt;
        String result = status.equals("completed") ? "'\"ok\"'" : "NULL";
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, lease_token, "
                + "lease_expires_at, expires_at) VALUES ('t1', '" + key + "', '" + status + "', " + result + ", "
                + lease + ", " + expiresAt + ")");
    }

    private int countKeys() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM idempotency_keys").mapTo(Integer.class).one());
    }
}

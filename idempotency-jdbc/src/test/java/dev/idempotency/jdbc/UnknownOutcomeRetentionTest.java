package dev.idempotency.jdbc;

import dev.idempotency.core.LeaseRequest;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.Outcome;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lease mode with a retention short enough to pass during one call: an outcome nobody knows
 * outlives every retention, so the external step never runs twice for one key.
 */
@Timeout(60)
class UnknownOutcomeRetentionTest {
    private static final Duration RETENTION = Duration.ofSeconds(1);

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(6);
    private static PostgresIdempotentExecutor executor;
    private static Sweeper sweeper;
    private static UnknownOutcomes operator;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> c.retention(RETENTION));
        sweeper = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build();
        operator = UnknownOutcomes.builder(db.schema.dataSource())
                .config(IdempotencyConfig.builder().schema(db.schema.name()).retention(Duration.ofHours(1)).build()).build();
    }

    @Test
    void anExternalStepOverrunningItsLeaseAndTheRetentionIsNeverRunAgainByARetryOrTheSweeper() {
        String key = newKey();
        AtomicInteger externalCalls = new AtomicInteger();

        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMillis(500)).resultType(String.class).build(),
                lease -> {
                    externalCalls.incrementAndGet();
                    db.awaitPast(key, "expires_at"); // the lease ran out and so did the key's retention

                    KeyInProgressException early = assertThrows(KeyInProgressException.class, () -> retry(key, externalCalls));
                    assertTrue(early.getMessage().contains("unknown"), early.getMessage());

                    assertTrue(sweeper.sweepOnce().leasesFailed() >= 1);
                    assertEquals("failed", db.keyRow(key, "t1").get("status"), "failed, and not purged by the same sweep");
                    BusinessFailure unknown = assertThrows(BusinessFailure.class, () -> retry(key, externalCalls));
                    assertEquals("lease_expired", unknown.code());
                    return "ch_late";
                }, (tx, chargeId) -> chargeId));

        assertTrue(lost.getMessage().contains("UnknownOutcomes"), lost.getMessage());
        sweeper.sweepOnce();
        assertEquals(1, db.keyRows(key, "t1"));
        assertTrue(operator.list(1000).stream().anyMatch(o -> o.key().equals(key)));
        assertEquals("lease_expired", assertThrows(BusinessFailure.class, () -> retry(key, externalCalls)).code());
        assertEquals(1, externalCalls.get());
    }

    @Test
    void aLeaseLongerThanHalfTheRetentionIsRefusedNamingTheLimit() {
        PostgresIdempotentExecutor twoSeconds = db.executor(c -> c.retention(Duration.ofSeconds(2)));

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> twoSeconds.runWithLease(
                LeaseRequest.builder(newKey(), "t1").lease(Duration.ofSeconds(2)).resultType(String.class).build(),
                lease -> "never", (tx, s) -> s));
        IllegalArgumentException tooShort = assertThrows(IllegalArgumentException.class, () -> twoSeconds.runWithLease(
                LeaseRequest.builder(newKey(), "t1").lease(Duration.ofMillis(99)).resultType(String.class).build(),
                lease -> "never", (tx, s) -> s));

        assertTrue(e.getMessage().startsWith("lease must be between 100 ms and half the retention"), e.getMessage());
        assertTrue(e.getMessage().contains("PT1S"), e.getMessage());
        assertTrue(tooShort.getMessage().startsWith("lease "), tooShort.getMessage());
        assertEquals("ran", twoSeconds.runWithLease(
                LeaseRequest.builder(newKey(), "t1").lease(Duration.ofSeconds(1)).resultType(String.class).build(),
                lease -> "ran", (tx, s) -> s).result());
    }

    @Test
    void anUnknownOutcomePastItsRetentionIsNeitherPurgedNorReclaimed() {
        String key = newKey();
        insertKey(key, "failed", "'{\"code\": \"lease_expired\", \"message\": \"unknown\"}'", "now() - interval '1 hour'");
        AtomicInteger runs = new AtomicInteger();

        sweeper.sweepOnce();
        BusinessFailure replay = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> runs.incrementAndGet()));

        assertEquals("lease_expired", replay.code());
        assertEquals(0, runs.get());
        assertEquals(1, db.keyRows(key, "t1"));
    }

    @Test
    void aLapsedLeasePastItsRetentionIsRecordedAndKeptByTheSameSweep() {
        String key = newKey();
        insertKey(key, "processing", "NULL", "now() - interval '1 hour'");

        sweeper.sweepOnce();

        assertEquals("failed", db.keyRow(key, "t1").get("status"));
        assertTrue(operator.list(1000).stream().anyMatch(o -> o.key().equals(key)));
    }

    @Test
    void aKeyUnderALiveLeasePastItsRetentionIsNeitherReclaimedNorPurged() {
        String key = newKey();
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, lease_token, lease_expires_at, "
                + "expires_at) VALUES ('t1', '" + key + "', 'processing', 7, now() + interval '1 hour', now() - interval '1 hour')");
        AtomicInteger runs = new AtomicInteger();

        assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> runs.incrementAndGet()));
        sweeper.sweepOnce();

        assertEquals(0, runs.get());
        assertEquals("processing", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void aResolvedUnknownOutcomeIsReplayedForAnotherRetentionBeforeItIsPurged() {
        String key = newKey();
        insertKey(key, "failed", "'{\"code\": \"lease_expired\", \"message\": \"unknown\"}'", "now() - interval '1 hour'");

        assertTrue(operator.resolveAsCompleted(key, "t1", "ch_found_at_provider"));
        sweeper.sweepOnce();

        Outcome<String> replay = executor.run(key, "t1", String.class, tx -> "never");
        assertTrue(replay.replayed());
        assertEquals("ch_found_at_provider", replay.result());
        assertFalse(operator.list(1000).stream().anyMatch(o -> o.key().equals(key)));
    }

    @Test
    void settledKeysPastTheirRetentionAreStillPurgedAndReclaimed() {
        String purged = newKey();
        String reclaimed = newKey();
        insertKey(purged, "completed", "NULL", "now() - interval '1 hour'");
        insertKey(reclaimed, "failed", "'{\"code\": \"card_declined\", \"message\": \"declined\"}'", "now() - interval '1 hour'");

        assertFalse(executor.run(reclaimed, "t1", tx -> "again").replayed());
        sweeper.sweepOnce();

        assertEquals(0, db.keyRows(purged, "t1"));
        assertEquals("completed", db.keyRow(reclaimed, "t1").get("status"));
    }

    private static Outcome<String> retry(String key, AtomicInteger externalCalls) {
        return executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMillis(500)).resultType(String.class).build(),
                lease -> {
            externalCalls.incrementAndGet();
            return "ch_second";
        }, (tx, chargeId) -> chargeId);
    }

    /** A key row; all but completed ones carry a lease that ran out a second ago. */
    private static void insertKey(String key, String status, String failure, String expiresAt) {
        String lease = status.equals("completed") ? "NULL, NULL" : "7, now() - interval '1 second'";
        String result = status.equals("completed") ? "'\"ok\"'" : "NULL";
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, failure, lease_token, "
                + "lease_expires_at, expires_at) VALUES ('t1', '" + key + "', '" + status + "', " + result + ", " + failure
                + ", " + lease + ", " + expiresAt + ")");
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.core.LeaseRequest;
import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.testing.TestDatabase;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(90)
class LeaseModeTest {
    record Charge(String chargeId, long cents) {
    }

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(6);
    private static PostgresIdempotentExecutor executor;
    private static ExecutorService pool;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> c.waitBudget(Duration.ofSeconds(30)));
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @Test
    void theExternalStepRunsOutsideATransactionAndTheCompletionCommitsOnceThenReplays() {
        String key = newKey();
        AtomicInteger externalCalls = new AtomicInteger();
        List<String> keysSentDownstream = new ArrayList<>();

        Outcome<Charge> first = executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> {
            externalCalls.incrementAndGet();
            keysSentDownstream.add(lease.key());
            assertEquals("processing", db.keyRow(key, "t1").get("status")); // committed before the external step
            return "ch_" + lease.fencingToken();
        }, (tx, chargeId) -> {
            insertPayment(tx, 700);
            tx.outbox().publish("payments", key, Map.of("charge", chargeId));
            return new Charge(chargeId, 700);
        });
        Outcome<Charge> replay = executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> {
            externalCalls.incrementAndGet();
            return "never";
        }, (tx, chargeId) -> new Charge(chargeId, 0));

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals(1, externalCalls.get());
        assertEquals(List.of(key), keysSentDownstream);
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(1, db.outboxEvents("t1", key));
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void aDuplicateDuringTheLeaseGetsInProgressAtOnceWithoutWaiting() throws Exception {
        String key = newKey();
        CountDownLatch external = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<Outcome<Charge>> holder = pool.submit(() -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMinutes(5)).resultType(Charge.class).build(),
                lease -> {
                    external.countDown();
                    release.await();
                    return "ch_1";
                }, (tx, chargeId) -> new Charge(chargeId, 1)));
        assertTrue(external.await(30, TimeUnit.SECONDS));

        // The wait budget is 30 s; answering while the holder is still blocked proves no waiting.
        Future<Object> duplicate = pool.submit(() -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMinutes(5)).resultType(Charge.class).build(),
                lease -> "never", (tx, chargeId) -> new Charge(chargeId, 2)));
        ExecutionException e = assertThrows(ExecutionException.class, () -> duplicate.get(20, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof KeyInProgressException, String.valueOf(e.getCause()));
        assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> "never"));

        release.countDown();
        assertEquals("ch_1", holder.get(30, TimeUnit.SECONDS).result().chargeId());
    }

    @Test
    void aLeaseLostToTheSweeperRefusesTheLateCompletionAndWritesNothing() {
        String key = newKey();
        Sweeper sweeper = Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build();

        LeaseLostException e = assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMillis(300)).resultType(Charge.class).build(),
                lease -> {
                    db.awaitPast(key, "lease_expires_at");
                    assertEquals(1, sweeper.sweepOnce().leasesFailed());
                    return "ch_late";
                }, (tx, chargeId) -> {
                    insertPayment(tx, 1);
                    return new Charge(chargeId, 1);
                }));

        assertTrue(e.getMessage().contains("reconcile"), e.getMessage());
        assertEquals(0, db.payments(key, "t1"));
        BusinessFailure replay = assertThrows(BusinessFailure.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(Charge.class).build(),
                lease -> "never", (tx, chargeId) -> new Charge(chargeId, 0)));
        assertEquals("lease_expired", replay.code());
    }

    @Test
    void aLeaseThatRanOutWithoutTheSweeperStillRefusesTheCompletion() {
        String key = newKey();

        assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMillis(300)).resultType(Charge.class).build(),
                lease -> {
                    db.awaitPast(key, "lease_expires_at");
                    return "ch_late";
                }, (tx, chargeId) -> new Charge(chargeId, 1)));

        assertEquals("processing", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void aFingerprintMismatchInLeaseModeIsRefusedWithoutRunningTheExternalStep() {
        String key = newKey();
        AtomicInteger externalCalls = new AtomicInteger();
        executor.runWithLease(
                LeaseRequest.builder(key, "t1")
                        .lease(Duration.ofSeconds(30)).fingerprint(RequestFingerprint.ofString("charge 100"))
                        .resultType(Charge.class).build(),
                lease -> externalCalls.incrementAndGet(), (tx, n) -> new Charge("ch", 100));

        assertThrows(KeyReusedException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1")
                        .lease(Duration.ofSeconds(30)).fingerprint(RequestFingerprint.ofString("charge 999"))
                        .resultType(Charge.class).build(),
                lease -> externalCalls.incrementAndGet(), (tx, n) -> new Charge("x", 999)));

        assertEquals(1, externalCalls.get());
    }

    @Test
    void aBusinessFailureOfTheExternalStepIsStoredAndReplayed() {
        String key = newKey();

        assertThrows(BusinessFailure.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> {
                    throw new BusinessFailure("card_declined", "Declined by the issuer");
                }, (tx, n) -> new Charge("never", 0)));
        BusinessFailure replay = assertThrows(BusinessFailure.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> "never", (tx, n) -> new Charge("never", 0)));

        assertTrue(replay.replayed());
        assertEquals("card_declined", replay.code());
    }

    @Test
    void anyOtherFailureOfTheExternalStepFreesTheKeyForARetry() throws Exception {
        String key = newKey();

        assertThrows(java.io.IOException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> {
                    throw new java.io.IOException("connection refused by the card network");
                }, (tx, n) -> new Charge("never", 0)));
        assertEquals(0, db.keyRows(key, "t1"));

        Outcome<Charge> retry = executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(Charge.class).build(),
                lease -> "ch_2", (tx, chargeId) -> new Charge(chargeId, 2));
        assertFalse(retry.replayed());
    }

    @Test
    void aCallerKilledBetweenTheStepsLeavesAFailureThatRetriesReplayUntilAnOperatorResolvesIt() throws Exception {
        String key = newKey();
        Process holder = startLeaseHolder(key, 1500);
        try {
            awaitLine(holder, "CLAIMED");
        } finally {
            holder.destroyForcibly();
            holder.waitFor(30, TimeUnit.SECONDS);
        }
        AtomicInteger externalCalls = new AtomicInteger();
        assertThrows(KeyInProgressException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                lease -> externalCalls.incrementAndGet(), (tx, n) -> "never"));

        db.awaitPast(key, "lease_expires_at");
        Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build().sweepOnce();

        BusinessFailure unknown = assertThrows(BusinessFailure.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                lease -> externalCalls.incrementAndGet(), (tx, n) -> "never"));
        assertEquals("lease_expired", unknown.code());
        assertEquals(0, externalCalls.get());

        UnknownOutcomes operator = UnknownOutcomes.builder(db.schema.dataSource())
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();
        assertTrue(operator.list(100).stream().anyMatch(o -> o.key().equals(key) && o.tenant().equals("t1")));
        assertTrue(operator.resolveAsCompleted(key, "t1", "ch_found_at_provider"));
        assertFalse(operator.resolveAsCompleted(key, "t1", "again"));

        Outcome<String> resolved = executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                lease -> "never", (tx, n) -> "never");
        assertTrue(resolved.replayed());
        assertEquals("ch_found_at_provider", resolved.result());
        assertEquals(0, externalCalls.get());
    }

    @Test
    void anOperatorCanFreeAnUnknownKeySoTheNextCallRunsAgain() {
        String key = newKey();
        db.schema.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, lease_token, lease_expires_at, "
                + "expires_at) VALUES ('t1', '" + key + "', 'processing', 7, now() - interval '1 second', now() + interval '1 hour')");
        Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).build().sweepOnce();
        UnknownOutcomes operator = UnknownOutcomes.builder(db.schema.dataSource())
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();

        assertTrue(operator.resolveAsNotRun(key, "t1"));

        assertFalse(executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                lease -> "ran",
                (tx, n) -> n).replayed());
    }

    private static Process startLeaseHolder(String key, long leaseMillis) throws Exception {
        TestDatabase database = TestDatabase.get();
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"),
                LeaseHolderProcess.class.getName(),
                database.url(), db.schema.name(), key, Long.toString(leaseMillis)));
        if (database.user() != null) {
            command.add(database.user());
            if (database.password() != null) {
                command.add(database.password());
            }
        }
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    private static void awaitLine(Process process, String prefix) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        Future<String> line = pool.submit(() -> {
            StringBuilder seen = new StringBuilder();
            for (String l = out.readLine(); l != null; l = out.readLine()) {
                if (l.startsWith(prefix)) {
                    return l;
                }
                seen.append(l).append('\n');
            }
            throw new AssertionError("the lease holder exited without taking the lease:\n" + seen);
        });
        line.get(60, TimeUnit.SECONDS);
    }
}

package dev.idempotency.faults;

import dev.idempotency.core.LeaseRequest;
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
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.jdbc.UnknownOutcomes;
import dev.idempotency.testing.Await;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tenant isolation at every entry point: a key tenant A used (completed, failed, in progress under a
 * lease, consumed as a message, or awaiting reconciliation) is invisible to tenant B, who runs its
 * own callback; B's errors name neither A nor A's results; relay metrics carry no tenant.
 */
@Timeout(120)
class TenantIsolationTest {
    @RegisterExtension
    static final FaultDatabase db = FaultDatabase.perClass();
    private static PostgresIdempotentExecutor executor;
    private String tenantA;
    private String tenantB;
    private String secretA;

    @BeforeAll
    static void setUp() {
        executor = db.executor("callers", 4, () -> { });
    }

    @org.junit.jupiter.api.BeforeEach
    void names() {
        tenantA = "tenant-a-" + UUID.randomUUID();
        tenantB = "tenant-b-" + UUID.randomUUID();
        secretA = "secret-of-a-" + UUID.randomUUID();
    }

    @Test
    void throughRunTenantBNeverSeesTenantAsResultFailureOrFingerprint() {
        String key = "order-" + UUID.randomUUID();
        String failedKey = "order-" + UUID.randomUUID();
        executor.run(key, tenantA, RequestFingerprint.ofString("request of A"), String.class, tx -> effect(tx, secretA));
        assertThrows(BusinessFailure.class, () -> executor.run(failedKey, tenantA, String.class, tx -> {
            throw new BusinessFailure("declined", "declined: " + secretA);
        }));

        Outcome<String> b = executor.run(key, tenantB, RequestFingerprint.ofString("request of B"), String.class,
                tx -> effect(tx, "result of B"));
        assertFalse(b.replayed(), "B ran its own callback: A's key, with another fingerprint, is not B's");
        assertEquals("result of B", b.result());
        Outcome<String> bFailed = executor.run(failedKey, tenantB, String.class, tx -> effect(tx, "B was not declined"));
        assertFalse(bFailed.replayed());
        assertEquals("B was not declined", bFailed.result());

        KeyReusedException reused = assertThrows(KeyReusedException.class, () -> executor.run(key, tenantB,
                RequestFingerprint.ofString("another request of B"), String.class, tx -> "never"));
        assertNoTraceOfA(reused);
        assertEquals(secretA, executor.run(key, tenantA, RequestFingerprint.ofString("request of A"), String.class,
                tx -> "never").result(), "A still replays its own result");
        assertEquals(1, effects(tenantA, key));
        assertEquals(1, effects(tenantB, key));
    }

    @Test
    void throughRunWithLeaseTenantBIsNotHeldUpByTenantAsLeaseAndBsErrorsNameOnlyB() throws Exception {
        String key = "charge-" + UUID.randomUUID();
        CountDownLatch aHoldsTheLease = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        CompletableFuture<Outcome<String>> a = CompletableFuture.supplyAsync(() -> unchecked(() -> executor.runWithLease(
                LeaseRequest.builder(key, tenantA).lease(Duration.ofSeconds(30)).resultType(String.class).build(),
                leased -> {
                    aHoldsTheLease.countDown();
                    releaseA.await(30, TimeUnit.SECONDS);
                    return secretA;
                }, (tx, external) -> effect(tx, external))));
        try {
            assertTrue(aHoldsTheLease.await(30, TimeUnit.SECONDS));
            Outcome<String> b = executor.runWithLease(
                    LeaseRequest.builder(key, tenantB).lease(Duration.ofSeconds(30)).resultType(String.class).build(),
                    leased -> "external of B", (tx, external) -> effect(tx, external));
            assertFalse(b.replayed(), "A's lease does not hold B's key");
            assertEquals("external of B", b.result());

            // B's own key in progress: the error B gets names B's key and tenant only.
            String bKey = "charge-" + UUID.randomUUID();
            CountDownLatch bHolds = new CountDownLatch(1);
            CountDownLatch releaseB = new CountDownLatch(1);
            CompletableFuture<Outcome<String>> bFirst = CompletableFuture.supplyAsync(() -> unchecked(() -> executor.runWithLease(
                    LeaseRequest.builder(bKey, tenantB).lease(Duration.ofSeconds(30)).resultType(String.class).build(),
                    leased -> {
                        bHolds.countDown();
                        releaseB.await(30, TimeUnit.SECONDS);
                        return "b";
                    }, (tx, external) -> external)));
            assertTrue(bHolds.await(30, TimeUnit.SECONDS));
            KeyInProgressException inProgress = assertThrows(KeyInProgressException.class, () -> executor.runWithLease(
                    LeaseRequest.builder(bKey, tenantB).lease(Duration.ofSeconds(30)).resultType(String.class).build(),
                    leased -> "never", (tx, external) -> external));
            assertNoTraceOfA(inProgress);
            releaseB.countDown();
            assertEquals("b", bFirst.get(30, TimeUnit.SECONDS).result());
        } finally {
            releaseA.countDown();
        }
        assertEquals(secretA, a.get(30, TimeUnit.SECONDS).result());
    }

    @Test
    void throughIdempotentConsumerTheSameMessageIdOfAnotherTenantIsAppliedNotADuplicate() {
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(executor, "shipping").build();
        String messageId = String.valueOf(System.nanoTime());
        assertEquals(Delivery.Outcome.APPLIED, consumer.consume(messageId, tenantA, tx -> effect(tx, secretA)).outcome());
        assertEquals(Delivery.Outcome.APPLIED, consumer.consume(messageId, tenantB, tx -> effect(tx, "b")).outcome());
        assertEquals(Delivery.Outcome.DUPLICATE, consumer.consume(messageId, tenantA, tx -> effect(tx, "again")).outcome());
        assertEquals(Delivery.Outcome.DUPLICATE, consumer.consume(messageId, tenantB, tx -> effect(tx, "again")).outcome());
    }

    @Test
    void throughUnknownOutcomesTenantBCannotResolveTenantAsKeyAndRunsItsOwn() {
        String key = "payout-" + UUID.randomUUID();
        assertThrows(LeaseLostException.class, () -> executor.runWithLease(
                LeaseRequest.builder(key, tenantA).lease(Duration.ofMillis(200)).resultType(String.class).build(),
                leased -> {
                    Thread.sleep(600); // time itself: past the 200 ms lease
                    return secretA;
                }, (tx, external) -> effect(tx, external)));
        IdempotencyConfig config = IdempotencyConfig.builder().schema(db.schema()).build();
        Sweeper.builder(db.pool("sweeper", 1)).schema(db.schema()).build().sweepOnce();
        UnknownOutcomes unknown = UnknownOutcomes.builder(db.pool("operator", 1)).config(config).build();
        assertTrue(unknown.list(1000).stream().anyMatch(u -> u.tenant().equals(tenantA) && u.key().equals(key)),
                "A's key awaits reconciliation");

        assertFalse(unknown.resolveAsCompleted(key, tenantB, "forged by B"), "B cannot resolve A's key");
        assertFalse(unknown.resolveAsNotRun(key, tenantB));
        Outcome<String> b = executor.run(key, tenantB, String.class, tx -> effect(tx, "b"));
        assertFalse(b.replayed());
        BusinessFailure stillUnknown = assertThrows(BusinessFailure.class,
                () -> executor.run(key, tenantA, String.class, tx -> "never"));
        assertEquals("lease_expired", stillUnknown.code(), "A's key is untouched by B");
    }

    @Test
    void relayMetricsCarryNoTenantLabel() throws Exception {
        PublishedEvents published = new PublishedEvents();
        try (WebhookSink sink = new WebhookSink(published);
             RelayProcess relay = RelayProcess.start("metrics", db, sink.baseUrl(), 0)) {
            assertTrue(relay.awaitRunning(90), relay.output());
            executor.run("m-" + UUID.randomUUID(), tenantA, String.class, tx -> {
                tx.outbox().publish("orders", "p1", java.util.Map.of("secret", secretA));
                return "ok";
            });
            HttpClient http = HttpClient.newHttpClient();
            AtomicReference<String> metrics = new AtomicReference<>("");
            Await.until("the published counter above 0 on /metrics", Duration.ofSeconds(60), () -> {
                if (relay.metricsUrl() != null) {
                    metrics.set(http.send(HttpRequest.newBuilder(URI.create(relay.metricsUrl())).build(),
                            HttpResponse.BodyHandlers.ofString()).body());
                }
                return metrics.get().matches("(?s).*outbox_events_published_total [1-9].*");
            });
            String body = metrics.get();
            assertFalse(body.contains(tenantA), "a metric names the tenant:\n" + body);
            assertFalse(body.contains("tenant"), "a metric has a tenant label:\n" + body);
            assertFalse(body.contains(secretA));
        }
    }

    private static <T> T unchecked(java.util.concurrent.Callable<T> call) {
        try {
            return call.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void assertNoTraceOfA(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            String message = String.valueOf(t.getMessage());
            assertFalse(message.contains(tenantA), "B's error names tenant A: " + message);
            assertFalse(message.contains(secretA), "B's error carries A's result: " + message);
        }
    }

    private static String effect(PostgresTransaction tx, String result) {
        tx.handle().createUpdate("INSERT INTO effects (tenant_id, request_key) VALUES (:t, :k)")
                .bind("t", tx.tenant()).bind("k", tx.key()).execute();
        return result;
    }

    private static long effects(String tenant, String key) {
        return db.jdbi().withHandle(h -> h.createQuery("SELECT count(*) FROM effects WHERE tenant_id = :t AND request_key = :k")
                .bind("t", tenant).bind("k", key).mapTo(Long.class).one());
    }
}

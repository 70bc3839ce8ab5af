package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisherConfig;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fault 3: a relay process is killed with SIGKILL while it has webhook requests in flight (mid-batch),
 * while a second relay runs in the test JVM; the second takes over the dead one's partitions when
 * their leases run out, and every committed event is published at least once, first publications
 * in id order per key.
 */
@Timeout(240)
class RelayKillTest {

    @Test
    void aRelayKilledMidBatchIsTakenOverAndNoEventIsLostOrReordered() throws Exception {
        PublishedEvents published = new PublishedEvents();
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_relay_kill");
             WebhookSink sink = new WebhookSink(published).delayMillis(5);
             HttpWebhookPublisher survivorPublisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                     .baseUrl(sink.baseUrl()).connectTimeout(Duration.ofSeconds(1)).requestTimeout(Duration.ofSeconds(1))
                     .header(WebhookSink.RELAY_HEADER, "survivor").build());
             RelayProcess doomed = RelayProcess.start("doomed", db, sink.baseUrl())) {
            assertTrue(doomed.awaitRunning(90), "the relay process did not start:\n" + doomed.output());
            Ledger ledger = new Ledger();
            OutboxRelay survivor = OutboxRelay.builder(db.pool("survivor", 3), survivorPublisher)
                    .config(OutboxRelayConfig.builder()
                    .schema(db.schema()).instanceId("survivor").partitions(RelayProcess.PARTITIONS)
                    .leaseDuration(Duration.ofSeconds(4)).renewalInterval(Duration.ofMillis(500))
                    .idlePollMax(Duration.ofMillis(100))
                    .backoffBase(Duration.ofMillis(50)).backoffMax(Duration.ofSeconds(1)).maxAttempts(1000).build()).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 6, survivor::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), "orders");
            survivor.start();
            try {
                CompletableFuture<Void> load = CompletableFuture.runAsync(() -> run(workload));
                assertTrue(awaitMidBatch(sink, "doomed", 120), "the doomed relay never had a request in flight:\n"
                        + doomed.output());
                doomed.kill();
                ledger.fault("relay process SIGKILLed mid-batch");
                int byDoomed = sink.received("doomed");
                load.get(180, TimeUnit.SECONDS);
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(90));
                Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
                accounting.print("fault 3: relay SIGKILLed mid-batch (doomed published " + byDoomed
                        + ", survivor " + sink.received("survivor") + ")");
                accounting.assertExact("fault 3: relay SIGKILLed mid-batch");
                assertTrue(byDoomed > 0, "the doomed relay published nothing before it was killed");
            } finally {
                survivor.stop();
            }
        }
    }

    private static boolean awaitMidBatch(WebhookSink sink, String relay, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            // Past its first few events, and with a request in flight right now.
            if (sink.received(relay) >= 20 && sink.inFlight(relay) > 0) {
                return true;
            }
            Thread.sleep(1);
        }
        return false;
    }

    static void run(Workload workload) {
        try {
            workload.run("order", 400);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

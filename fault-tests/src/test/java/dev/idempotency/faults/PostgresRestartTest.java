package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fault 2: PostgreSQL restarts (fast shutdown, down for a moment, up again) in the middle of the
 * load, on a private server so the shared one is left alone. Callers in flight get
 * TransientFailureException (57P01 admin shutdown, a lost connection, or a refused/timed-out
 * connection while it is down), retry with the same key, and the accounting is exact afterwards.
 */
@Timeout(240)
class PostgresRestartTest {

    @Test
    void aServerRestartMidLoadLeavesEveryEffectOnceAndEveryEventPublishedInOrder() throws Exception {
        try (PrivatePostgres server = PrivatePostgres.start();
             FaultDatabase db = FaultDatabase.on(server.url(), "fault_restart")) {
            Ledger ledger = new Ledger();
            PublishedEvents published = new PublishedEvents();
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 3), new RecordingSink(published))
                    .config(Relays.fastConfig(db.schema())).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 6, relay::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), "payments");
            relay.start();
            try {
                CompletableFuture<Void> load = CompletableFuture.runAsync(() -> {
                    try {
                        workload.run("restart", 400);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                assertTrue(BrokerOutageTest.awaitPublications(published, 100, 120), "the load never got going");
                server.stopServer();
                ledger.fault("postgres fast shutdown, down 2 s, started");
                Thread.sleep(2_000);
                server.startServer();
                load.get(180, TimeUnit.SECONDS);
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(90));
            } finally {
                relay.stop();
            }
            Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
            accounting.print("fault 2: PostgreSQL restarted mid-load");
            accounting.assertExact("fault 2: PostgreSQL restarted mid-load");
        }
    }
}

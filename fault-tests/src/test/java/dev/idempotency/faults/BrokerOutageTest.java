package dev.idempotency.faults;

import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TcpProxy;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fault 4: RabbitMQ goes away for a few seconds mid-load (a proxy between the relay's publisher and
 * the broker closes every connection and stops listening) and comes back. Events committed during
 * the outage wait and are published after it: nothing lost, first publications in id order per key.
 */
@Timeout(240)
class BrokerOutageTest {

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @Test
    void theBrokerGoingAwayAndComingBackLosesAndReordersNothing() throws Exception {
        PublishedEvents published = new PublishedEvents();
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_broker");
             RabbitMqQueue queue = new RabbitMqQueue("fault-broker", published);
             TcpProxy proxy = TcpProxy.to(5672);
             RabbitMqPublisher publisher = new RabbitMqPublisher(RabbitMqPublisherConfig.builder()
                     .host("127.0.0.1").port(proxy.port())
                     .connectTimeout(Duration.ofSeconds(2)).confirmTimeout(Duration.ofSeconds(2)).build())) {
            Ledger ledger = new Ledger();
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 3), publisher)
                    .config(Relays.fastConfig(db.schema())).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 6, relay::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), queue.name());
            relay.start();
            try {
                CompletableFuture<Void> load = CompletableFuture.runAsync(() -> {
                    try {
                        workload.run("shipment", 400);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                assertTrue(awaitPublications(published, 50, 120), "nothing reached the broker before the outage");
                proxy.cut();
                ledger.fault("broker unreachable for 4 s");
                int beforeOutage = published.size();
                Thread.sleep(4_000);
                int duringOutage = published.size() - beforeOutage;
                proxy.restore();
                load.get(180, TimeUnit.SECONDS);
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(90));
                Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
                accounting.print("fault 4: broker away for 4 s (" + duringOutage + " publications during the cut)");
                accounting.assertExact("fault 4: broker away for 4 s");
            } finally {
                relay.stop();
            }
        }
    }

    static boolean awaitPublications(PublishedEvents published, int count, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (published.size() >= count) {
                return true;
            }
            Thread.sleep(10);
        }
        return false;
    }
}

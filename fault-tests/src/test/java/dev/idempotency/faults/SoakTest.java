package dev.idempotency.faults;

import dev.idempotency.testing.TcpProxy;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisherConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The mixed workload under random faults for a configurable time, then the accounting table.
 * Run long with {@code -Didempotency.soak.seconds=600}; without it CI runs {@value #DEFAULT_SECONDS} s.
 *
 * <p>Duplicate callers run rounds of keys, a tenth of whose callbacks update two hot rows in
 * random order (deadlocks). Meanwhile, every one to three seconds, one fault at random: callback
 * connections killed, a relay process SIGKILLed (and a fresh one started), or the webhook "broker"
 * cut off for one to three seconds behind a proxy. One relay in the test JVM is never killed, so
 * the killed relays' partitions are taken over. Afterwards: effects double-applied and events
 * lost must be 0, no caller may have seen an unclear error, first publications stay in id order.
 */
class SoakTest {
    static final String SECONDS_PROPERTY = "idempotency.soak.seconds";
    static final long DEFAULT_SECONDS = 15;

    private static long soakSeconds() {
        String value = System.getProperty(SECONDS_PROPERTY);
        return value == null || value.isBlank() ? DEFAULT_SECONDS : Long.parseLong(value.strip());
    }

    @Test
    @Timeout(value = 24, unit = java.util.concurrent.TimeUnit.HOURS) // bounded below by the soak time itself
    void underRandomFaultsNoEffectIsDoubledAndNoEventIsLost() throws Exception {
        long seconds = soakSeconds();
        long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        PublishedEvents published = new PublishedEvents();
        Ledger ledger = new Ledger();
        List<RelayProcess> relays = new ArrayList<>();
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_soak");
             WebhookSink sink = new WebhookSink(published);
             TcpProxy broker = TcpProxy.to(sink.port());
             HttpWebhookPublisher steadyPublisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                     .baseUrl(baseUrl(broker)).connectTimeout(Duration.ofSeconds(1)).requestTimeout(Duration.ofSeconds(1))
                     .header(WebhookSink.RELAY_HEADER, "steady").build())) {
            int relayNumber = 0;
            for (; relayNumber < 2; relayNumber++) {
                relays.add(RelayProcess.start("soak-relay-" + relayNumber, db, baseUrl(broker)));
            }
            OutboxRelay steady = OutboxRelay.builder(db.pool("steady-relay", 3), steadyPublisher)
                    .config(OutboxRelayConfig.builder()
                    .schema(db.schema()).instanceId("steady").partitions(RelayProcess.PARTITIONS)
                    .leaseDuration(Duration.ofSeconds(4)).renewalInterval(Duration.ofMillis(500))
                    .idlePollMax(Duration.ofMillis(100))
                    .backoffBase(Duration.ofMillis(50)).backoffMax(Duration.ofSeconds(1)).maxAttempts(1000).build()).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 6, steady::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), "soak")
                    .deadlockShare(0.1).callerDeadline(Duration.ofSeconds(120));
            ConnectionKiller killer = new ConnectionKiller(db, "callers", ledger, 0, 0);
            steady.start();
            long started = System.nanoTime();
            Thread faults = new Thread(() -> injectFaults(end, db, broker, relays, killer, ledger), "soak-faults");
            faults.setDaemon(true);
            faults.start();
            try {
                for (int round = 0; System.nanoTime() < end; round++) {
                    workload.run("soak-r" + round, 100);
                }
                faults.join(60_000);
                assertTrue(!faults.isAlive(), "the fault injector did not stop");
                broker.restore();
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(120));
            } finally {
                faults.interrupt();
                steady.stop();
                for (RelayProcess relay : relays) {
                    relay.close();
                }
            }
            Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
            String title = "soak: " + Duration.ofNanos(System.nanoTime() - started).toSeconds() + " s of mixed load with random faults"
                    + " (deadlocks show as retried 40P01)";
            accounting.print(title);
            accounting.assertExact(title);
        }
    }

    private static String baseUrl(TcpProxy broker) {
        return "http://127.0.0.1:" + broker.port() + "/hooks";
    }

    private static void injectFaults(long end, FaultDatabase db, TcpProxy broker, List<RelayProcess> relays,
                                     ConnectionKiller killer, Ledger ledger) {
        int started = relays.size();
        long lastRelayKill = 0;
        List<Integer> kinds = new ArrayList<>();
        try {
            while (System.nanoTime() < end) {
                Thread.sleep(ThreadLocalRandom.current().nextLong(1_000, 3_000));
                if (kinds.isEmpty()) {
                    // Every kind once per cycle, in random order, so that even a short soak sees each.
                    kinds.addAll(List.of(0, 1, 2));
                    java.util.Collections.shuffle(kinds);
                }
                switch (kinds.remove(0)) {
                    case 0 -> {
                        for (int i = ThreadLocalRandom.current().nextInt(1, 4); i > 0; i--) {
                            killer.killOne();
                        }
                    }
                    case 1 -> {
                        // A fresh relay JVM takes seconds to start on a busy machine: at most one kill every 5 s.
                        if (System.nanoTime() - lastRelayKill < 5_000_000_000L) {
                            continue;
                        }
                        RelayProcess victim = relays.get(ThreadLocalRandom.current().nextInt(relays.size()));
                        if (victim.isAlive()) {
                            victim.kill();
                            ledger.fault("relay process SIGKILLed");
                            lastRelayKill = System.nanoTime();
                            relays.set(relays.indexOf(victim), RelayProcess.start("soak-relay-" + started++, db,
                                    "http://127.0.0.1:" + broker.port() + "/hooks"));
                        }
                    }
                    default -> {
                        broker.cut();
                        ledger.fault("broker cut off");
                        Thread.sleep(ThreadLocalRandom.current().nextLong(1_000, 3_000));
                        broker.restore();
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            ledger.fault("injector failed: " + e);
        } finally {
            broker.restore();
        }
    }
}

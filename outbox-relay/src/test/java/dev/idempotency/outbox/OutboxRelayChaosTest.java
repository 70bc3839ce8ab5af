package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Three relays on one database while events keep coming and some attempts fail; every so often one
 * of them crashes (threads stopped, leases left to run out) and a fresh instance replaces it.
 */
@Timeout(150)
class OutboxRelayChaosTest {
    private static final Logger logger = LoggerFactory.getLogger(OutboxRelayChaosTest.class);

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final List<Running> running = new ArrayList<>();

    private record Running(OutboxRelay relay, HikariDataSource pool) {
    }

    @AfterEach
    void tearDown() {
        running.forEach(r -> {
            r.relay().close();
            r.pool().close();
        });
    }

    private Running start(String instance) {
        OutboxRelayConfig config = outbox.config(instance)
                .partitions(16)
                .batchSize(20)
                .maxEventsPerKey(5)
                .leaseDuration(Duration.ofSeconds(2))
                .renewalInterval(Duration.ofMillis(200))
                .publishTimeout(Duration.ofMillis(800))
                .build();
        HikariDataSource pool = outbox.newPool(3);
        // Slow acknowledgements (a crash during the wait loses them) and one failed attempt in 30.
        RecordingPublisher publisher = new RecordingPublisher(instance, log).delayMillis(10)
                .failing(e -> ThreadLocalRandom.current().nextInt(30) == 0);
        OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build();
        relay.start();
        Running r = new Running(relay, pool);
        running.add(r);
        return r;
    }

    @Test
    void everyEventIsPublishedAndFirstPublicationsFollowIdOrderPerKeyAcrossRelayCrashes() throws Exception {
        for (int i = 0; i < 3; i++) {
            start("relay-" + i);
        }
        List<Long> ids = new CopyOnWriteArrayList<>();
        // One writer, so ids of a key are committed in id order, as the executor's ordering lock ensures.
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < 1200; i++) {
                int key = i % 40;
                ids.add(outbox.insert("tenant-" + key % 3, "topic-" + key % 2, "key-" + key, "{\"i\": " + i + "}"));
                if (i % 20 == 0) {
                    sleep(100);
                }
            }
        });

        Random random = new Random();
        int crashes = 0;
        while (!writer.isDone()) {
            sleep(700 + random.nextInt(800));
            Running victim = running.get(random.nextInt(running.size()));
            logger.info("crashing {} holding {}", victim.relay().instanceId(), victim.relay().heldPartitions());
            victim.relay().halt();
            running.remove(victim);
            victim.pool().close();
            start("replacement-" + (++crashes));
        }
        writer.get(10, TimeUnit.SECONDS);

        outbox.awaitStatus(ids, "published", Duration.ofSeconds(60));
        assertTrue(crashes >= 3, "only " + crashes + " crashes happened");
        ids.forEach(id -> assertTrue(log.published(id), "event " + id + " reached the broker"));
        assertEquals(List.of(), log.keysOutOfOrder(), "keys whose first publications are out of id order");
        assertEquals(List.of(), List.copyOf(log.concurrentlyPublished()), "events inside two publish calls at once");
        assertEquals(List.of(), log.sameKeyInOneCall(), "keys with two events in one publish call");
        long duplicates = log.publications().size() - ids.size();
        logger.info("{} events, {} crashes, {} duplicate publications", ids.size(), crashes, duplicates);
    }

    /** Time itself: paces the writer and the crashes. */
    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

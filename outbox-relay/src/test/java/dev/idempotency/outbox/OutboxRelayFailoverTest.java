package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Two relays on one database: one crashes, or stops gracefully, and the other carries on. */
@Timeout(90)
class OutboxRelayFailoverTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.get(i).close();
        }
    }

    private OutboxRelay relay(OutboxRelayConfig config, RecordingPublisher publisher) {
        HikariDataSource pool = outbox.newPool(3);
        resources.add(pool);
        OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build();
        resources.add(relay);
        relay.start();
        return relay;
    }

    private List<Long> insertAcrossKeys(int count) {
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ids.add(outbox.insert("t", "orders", "key-" + (i % 40), "{\"i\": " + i + "}"));
        }
        return ids;
    }

    @Test
    void aCrashedRelaysPartitionsAreTakenOverWithinTheLeaseDuration() {
        OutboxRelayConfig configA = outbox.config("a").build();
        OutboxRelay a = relay(configA, new RecordingPublisher("a", log));
        OutboxRelay b = relay(outbox.config("b").build(), new RecordingPublisher("b", log));
        Await.until("both relays hold their fair share", Duration.ofSeconds(30),
                () -> a.heldPartitions().size() == 4 && b.heldPartitions().size() == 4);
        Set<Integer> ofA = a.heldPartitions();

        a.halt();
        long crashedAt = System.nanoTime();
        List<Long> ids = insertAcrossKeys(80);

        Await.until("b holds every partition", Duration.ofSeconds(30), () -> b.heldPartitions().size() == 8);
        Duration takeover = Duration.ofNanos(System.nanoTime() - crashedAt);
        outbox.awaitStatus(ids, "published", Duration.ofSeconds(30));

        // The bound is leaseDuration + a renewal interval; the rest is slack for a loaded machine.
        Duration bound = configA.leaseDuration().plus(configA.renewalInterval()).plusSeconds(5);
        assertTrue(takeover.compareTo(bound) <= 0, "takeover took " + takeover + ", bound " + bound);
        assertTrue(ofA.stream().allMatch(p -> "b".equals(outbox.owners().get(p))));
        ids.forEach(id -> assertEquals("b", log.firstPublisher(id), "event " + id));
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    @Test
    void aGracefulStopFinishesAndMarksItsBatchAndHandsItsPartitionsOverAtOnce() throws Exception {
        // 20 s leases: a hand-over that waited for a lease to run out would be far too slow for the waits below.
        OutboxRelayConfig.Builder slowLeases = outbox.config("a").leaseDuration(Duration.ofSeconds(20))
                .publishTimeout(Duration.ofSeconds(10));
        List<Long> inFlight = new ArrayList<>();
        for (int k = 0; k < 10; k++) {
            inFlight.add(outbox.insert("t", "orders", "key-" + k, "{}"));
        }
        RecordingPublisher publisherA = new RecordingPublisher("a", log).closeGate();
        OutboxRelay a = relay(slowLeases.build(), publisherA);
        assertTrue(publisherA.awaitBlocked(20), "a's batch is in flight");
        inFlight.forEach(id -> assertTrue(publisherA.received(id) != null, "event " + id + " is in a's batch"));
        OutboxRelay b = relay(slowLeases.instanceId("b").build(), new RecordingPublisher("b", log));

        FutureTask<Void> stopping = new FutureTask<>(a::stop, null);
        new Thread(stopping, "stopping-relay-a").start();
        Await.threadWaitingIn("stopping-relay-a", OutboxRelay.class.getName(), "join"); // stop() waits for the worker
        assertTrue(!stopping.isDone(), "stop waits for the batch in flight");
        publisherA.openGate();
        stopping.get(30, TimeUnit.SECONDS);
        long stoppedAt = System.nanoTime();

        inFlight.forEach(id -> assertEquals("published", outbox.status(id), "event " + id + " was marked"));
        assertEquals(Set.of(), a.heldPartitions());
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_partitions WHERE owner_id = 'a'"));
        Await.until("b holds every partition", Duration.ofSeconds(10), () -> b.heldPartitions().size() == 8);
        assertTrue(Duration.ofNanos(System.nanoTime() - stoppedAt).compareTo(Duration.ofSeconds(15)) < 0,
                "b took over without waiting for a's 20 s leases to run out");
        List<Long> later = insertAcrossKeys(20);
        b.wakeUp();
        outbox.awaitStatus(later, "published", Duration.ofSeconds(20));
        inFlight.forEach(id -> assertEquals(1, log.publicationCount(id), "event " + id + " was published once"));
        later.forEach(id -> assertEquals("b", log.firstPublisher(id)));
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retries, holding back, starvation and dead letters; one partition, so every key shares it. */
@Timeout(90)
class OutboxRelayRetryTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final RecordingPublisher publisher = new RecordingPublisher("a", log);
    private HikariDataSource pool;
    private OutboxRelay relay;

    @BeforeEach
    void setUp() {
        pool = outbox.newPool(3);
    }

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
        pool.close();
    }

    private void startRelay(OutboxRelayConfig.Builder config) {
        relay = OutboxRelay.builder(pool, publisher).config(config.partitions(1).build()).build();
        relay.start();
    }

    private void startRelay(OutboxRelayConfig.Builder config, OutboxRelayListener listener) {
        relay = OutboxRelay.builder(pool, publisher).config(config.partitions(1).build()).listener(listener).build();
        relay.start();
    }

    @Test
    void aFailingEventHoldsBackOnlyTheLaterEventsOfItsOwnKey() {
        List<Long> stuck = new ArrayList<>();
        List<Long> flowing = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            stuck.add(outbox.insert("t", "orders", "stuck", "{}"));
            flowing.add(outbox.insert("t", "orders", "flowing", "{}"));
        }
        long failing = stuck.get(0);
        publisher.failing(e -> e.id() == failing);
        startRelay(outbox.config("a"));

        outbox.awaitStatus(flowing, "published", Duration.ofSeconds(30));
        Await.until("a few retries of the failing event", Duration.ofSeconds(30), () -> outbox.attempts(failing) >= 3);
        stuck.forEach(id -> assertEquals("pending", outbox.status(id)));
        assertNull(publisher.received(stuck.get(1)), "an event behind a failing one of its key is not sent");
        assertNull(publisher.received(stuck.get(2)));
        assertTrue(outbox.lastError(failing).contains("injected failure"), outbox.lastError(failing));

        publisher.failing(e -> false);

        outbox.awaitStatus(stuck, "published", Duration.ofSeconds(30));
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    @Test
    void aFailedEventIsNotTriedAgainBeforeItsBackoffHasPassed() {
        long failing = outbox.insert("t", "orders", "k", "{}");
        publisher.failing(e -> e.id() == failing);
        startRelay(outbox.config("a").backoffBase(Duration.ofHours(1)).backoffMax(Duration.ofHours(2)));

        Await.until("the first attempt", Duration.ofSeconds(30), () -> outbox.attempts(failing) == 1);
        List<Long> later = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            later.add(outbox.insert("t", "orders", "other-" + i, "{}"));
            relay.wakeUp();
        }
        outbox.awaitStatus(later, "published", Duration.ofSeconds(30));

        assertEquals(1, outbox.attempts(failing), "no second attempt within the backoff");
        assertEquals(1, outbox.number("SELECT count(*) FROM outbox_retries WHERE event_id = " + failing
                + " AND next_attempt_at BETWEEN now() + interval '29 minutes' AND now() + interval '61 minutes'"),
                "the retry waits half to all of the 1 h backoff");
    }

    @Test
    void aFailingKeyWithThousandsOfPendingEventsDoesNotStarveOtherKeys() {
        List<Long> stuck = outbox.insertMany("t", "orders", "stuck", 3000);
        long failing = stuck.get(0);
        publisher.failing(e -> e.id() == failing);
        List<Long> others = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            others.add(outbox.insert("t", "orders", "other-" + (i % 20), "{}"));
        }
        startRelay(outbox.config("a").batchSize(50));

        outbox.awaitStatus(others, "published", Duration.ofSeconds(40));
        assertEquals(3000, outbox.count("partition_key = 'stuck' AND status = 'pending'"));
        assertTrue(outbox.attempts(failing) >= 1);
        assertNull(publisher.received(stuck.get(1)));
    }

    @Test
    void manyKeysWaitingForRetriesDoNotHideTheKeysBehindThem() {
        List<Long> waiting = new ArrayList<>();
        List<Long> healthy = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            waiting.add(outbox.insert("waiting", "orders", "key-" + i, "{}"));
        }
        for (int i = 0; i < 10; i++) {
            healthy.add(outbox.insert("healthy", "orders", "key-" + i, "{}"));
        }
        publisher.failing(e -> e.tenant().equals("waiting"));
        // Batches of 10 keys: the 100 waiting keys fill ten batches' worth of the key space.
        startRelay(outbox.config("a").batchSize(10).backoffBase(Duration.ofHours(1)).backoffMax(Duration.ofHours(1)));

        outbox.awaitStatus(healthy, "published", Duration.ofSeconds(40));
        assertEquals(100, outbox.count("tenant_id = 'waiting' AND status = 'pending'"));
    }

    /**
     * A page is read in id order, so within one partition a key's long backlog goes first (in pages
     * holding at most maxEventsPerKey of its events); keys of the relay's other partitions do not wait for it.
     */
    @Test
    void aLongHealthyBacklogOfOneKeyDoesNotHoldBackTheKeysOfOtherPartitions() {
        List<Long> busy = outbox.insertMany("t", "orders", "busy", 2000);
        int busyPartition = outbox.partitionOf(busy.get(0), 8);
        List<Long> others = new ArrayList<>();
        for (int i = 0; others.size() < 60; i++) {
            long id = outbox.insert("t", "orders", "other-" + i, "{}");
            if (outbox.partitionOf(id, 8) != busyPartition) {
                others.add(id);
            }
        }
        relay = OutboxRelay.builder(pool, publisher)
                .config(outbox.config("a").partitions(8).batchSize(50).maxEventsPerKey(10).build()).build();
        relay.start();

        outbox.awaitStatus(others, "published", Duration.ofSeconds(40));
        List<Long> publications = log.publications();
        Set<Long> busyIds = Set.copyOf(busy);
        int lastOther = 0;
        for (int i = 0; i < publications.size(); i++) {
            if (others.contains(publications.get(i))) {
                lastOther = i;
            }
        }
        long busyBeforeLastOther = publications.subList(0, lastOther).stream().filter(busyIds::contains).count();
        assertTrue(busyBeforeLastOther <= 100,
                "the other keys waited behind " + busyBeforeLastOther + " events of the busy key");
        outbox.awaitStatus(busy, "published", Duration.ofSeconds(60));
        assertEquals(List.of(), log.keysOutOfOrder());
        assertTrue(log.sameKeyInOneCall().isEmpty());
    }

    @Test
    void aRowThatCannotBeDecodedIsDeadLetteredAndTheRelayGoesOn() {
        long before = outbox.insert("t", "orders", "k", "{}");
        long poison = outbox.insert("t", "orders", "k", "{}", "{\"retries\": 3}");
        long after = outbox.insert("t", "orders", "k", "{}");
        long other = outbox.insert("t", "orders", "other", "{}");
        Map<Long, String> deadLettered = new ConcurrentHashMap<>();
        startRelay(outbox.config("a"), new OutboxRelayListener() {
            @Override
            public void deadLettered(long eventId, String error) {
                deadLettered.put(eventId, error);
            }
        });

        outbox.awaitStatus(List.of(before, after, other), "published", Duration.ofSeconds(30));
        assertEquals("dead", outbox.status(poison));
        assertTrue(outbox.lastError(poison).contains("header 'retries' is number, not a string"), outbox.lastError(poison));
        assertEquals(0, outbox.attempts(poison), "it was never sent");
        assertNull(publisher.received(poison));
        assertEquals(Set.of(poison), deadLettered.keySet());
        assertEquals(List.of(before, after), log.firstPublicationsByKey().get("t/orders/k"));
    }

    @Test
    void deadLettersAfterMaxAttemptsOrARejectionCanBeListedAndRequeued() {
        long exhausted = outbox.insert("t", "orders", "x", "{}");
        long behindExhausted = outbox.insert("t", "orders", "x", "{}");
        long rejected = outbox.insert("t2", "invoices", "y", "{}");
        long behindRejected = outbox.insert("t2", "invoices", "y", "{}");
        publisher.failing(e -> e.id() == exhausted).rejecting(e -> e.id() == rejected);
        startRelay(outbox.config("a").maxAttempts(3));

        outbox.awaitStatus(List.of(behindExhausted, behindRejected), "published", Duration.ofSeconds(30));
        assertEquals("dead", outbox.status(exhausted));
        assertEquals(3, outbox.attempts(exhausted));
        assertEquals("dead", outbox.status(rejected));
        assertEquals(1, outbox.attempts(rejected), "a rejection is dead-lettered at once");

        OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(outbox.dataSource()).schema(outbox.schema()).build();
        List<OutboxDeadLetter> listed = deadLetters.list(10);
        assertEquals(List.of(exhausted, rejected), listed.stream().map(OutboxDeadLetter::id).toList());
        OutboxDeadLetter first = listed.get(0);
        assertEquals("t", first.tenant());
        assertEquals("orders", first.topic());
        assertEquals("x", first.partitionKey());
        assertEquals(3, first.attempts());
        assertTrue(first.lastError().contains("injected failure of event " + exhausted), first.lastError());
        assertTrue(first.createdAt() != null);
        assertTrue(listed.get(1).lastError().contains("injected rejection of event " + rejected), listed.get(1).lastError());
        assertEquals(2, deadLetters.count());
        assertEquals(1, deadLetters.list(1).size());

        publisher.failing(e -> false).rejecting(e -> false);
        assertTrue(deadLetters.requeue(exhausted));
        assertFalse(deadLetters.requeue(behindExhausted), "only dead letters are requeued");
        assertFalse(deadLetters.requeue(-1));
        relay.wakeUp();

        outbox.awaitStatus(List.of(exhausted), "published", Duration.ofSeconds(30));
        assertEquals("dead", outbox.status(rejected));
        assertEquals(List.of(rejected), deadLetters.list(10).stream().map(OutboxDeadLetter::id).toList());

        assertEquals(1, deadLetters.requeueAll());
        relay.wakeUp();

        outbox.awaitStatus(List.of(rejected), "published", Duration.ofSeconds(30));
        assertEquals(List.of(), deadLetters.list(10));
        assertEquals(0, deadLetters.count());
    }

    @Test
    void aDeletedDeadLetterIsNeverPublishedAndItsKeysLaterEventsStillAre() {
        long rejected = outbox.insert("t", "orders", "z", "{}");
        long behind = outbox.insert("t", "orders", "z", "{}");
        publisher.rejecting(e -> e.id() == rejected);
        startRelay(outbox.config("a"));
        outbox.awaitStatus(List.of(behind), "published", Duration.ofSeconds(30));
        assertEquals("dead", outbox.status(rejected));
        OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(outbox.dataSource()).schema(outbox.schema()).build();
        publisher.rejecting(e -> false);

        assertFalse(deadLetters.delete(behind), "only dead letters are deleted");
        assertTrue(deadLetters.delete(rejected));
        assertFalse(deadLetters.delete(rejected), "deleted already");
        assertFalse(deadLetters.requeue(rejected), "nothing left to requeue");
        long next = outbox.insert("t", "orders", "z", "{}");
        relay.wakeUp();

        outbox.awaitStatus(List.of(next), "published", Duration.ofSeconds(30));
        assertEquals(0, deadLetters.count());
        assertFalse(log.published(rejected), "the deleted dead letter was never published");
        assertNull(outbox.lastError(rejected), "its row in outbox_retries is gone");
        assertEquals("published", outbox.status(rejected), "as documented: its partition's position passed it");
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class OutboxRelayPublishingTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();

    @Test
    void publishesEveryCommittedEventOnceInIdOrderPerKeyAndMarksItPublished() {
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            for (int k = 0; k < 5; k++) {
                ids.add(outbox.insert("tenant-" + (k % 2), "orders", "key-" + k, "{\"i\": " + i + "}"));
            }
        }
        long withHeaders = outbox.insert("tenant-0", "orders", "key-0", "{\"last\": true}", "{\"trace\": \"abc\"}");
        ids.add(withHeaders);
        RecordingPublisher publisher = new RecordingPublisher("a", log);

        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").build()).build()) {
            relay.start();
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(30));
        }

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        assertEquals(List.of(), log.keysOutOfOrder());
        assertEquals(List.of(), log.sameKeyInOneCall());
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_retries"), "nothing failed, so nothing was copied");
        OutboxEvent last = publisher.received(withHeaders);
        assertEquals(Map.of("trace", "abc"), last.headers());
        assertEquals("{\"last\": true}", last.payloadJson());
        assertEquals("tenant-0", last.tenant());
        assertEquals("key-0", last.partitionKey());
        assertEquals(1, last.attempt());
    }

    @Test
    void anIdleRelayPublishesAtOnceWhenWokenUp() throws Exception {
        OutboxRelayConfig config = outbox.config("idle")
                .idlePollMin(Duration.ofHours(1)).idlePollMax(Duration.ofHours(1)).build();
        RecordingPublisher publisher = new RecordingPublisher("a", log);
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build()) {
            relay.start();
            Await.until("partitions held", Duration.ofSeconds(20), () -> relay.heldPartitions().size() == 8);
            Await.threadWaitingIn("outbox-relay-worker-idle", IdleWait.class.getName(), "await"); // polled and found nothing
            long id = outbox.insert("t", "orders", "k", "{}");
            Thread.sleep(500); // time itself: a relay polling meanwhile would publish the event
            assertEquals("pending", outbox.status(id), "an idle relay polls only every idlePollMax");

            relay.wakeUp();

            outbox.awaitStatus(List.of(id), "published", Duration.ofSeconds(20));
        }
    }

    @Test
    void tellsItsListenerAboutEachPublicationWithItsAgeAndReportsTheBacklog() {
        OutboxBacklog backlog = OutboxBacklog.builder(outbox.dataSource()).schema(outbox.schema()).build();
        assertEquals(0, backlog.pendingCount());
        assertEquals(Duration.ZERO, backlog.oldestPendingAge());
        long old = outbox.insert("t", "orders", "k", "{}");
        outbox.execute("UPDATE outbox_events SET created_at = now() - interval '1 hour' WHERE id = " + old);
        long fresh = outbox.insert("t", "orders", "k", "{}");
        assertEquals(2, backlog.pendingCount());
        assertTrue(backlog.oldestPendingAge().compareTo(Duration.ofMinutes(59)) >= 0, backlog.oldestPendingAge().toString());

        Map<Long, Duration> ages = new ConcurrentHashMap<>();
        List<Long> failed = new CopyOnWriteArrayList<>();
        OutboxRelayListener listener = new OutboxRelayListener() {
            @Override
            public void published(OutboxEvent event, Duration sinceCreated) {
                ages.put(event.id(), sinceCreated);
            }

            @Override
            public void publishFailed(OutboxEvent event, String error) {
                failed.add(event.id());
            }
        };
        RecordingPublisher publisher = new RecordingPublisher("a", log);
        publisher.failing(e -> e.id() == old && e.attempt() < 3);
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher)
                     .config(outbox.config("a").build()).listener(listener).build()) {
            relay.start();
            outbox.awaitStatus(List.of(old, fresh), "published", Duration.ofSeconds(30));
        }

        assertEquals(List.of(old, old), failed);
        assertTrue(ages.get(old).compareTo(Duration.ofMinutes(59)) >= 0, ages.toString());
        assertTrue(!ages.get(fresh).isNegative() && ages.get(fresh).compareTo(Duration.ofMinutes(5)) < 0, ages.toString());
        assertEquals(0, backlog.pendingCount());
        assertEquals(Duration.ZERO, backlog.oldestPendingAge());
        assertEquals(3, publisher.received(old).attempt(), "failed attempts are counted: the third one says so");
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_retries"), "its retry row went once it was published");
    }
}

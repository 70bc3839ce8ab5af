package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The linger: fewer, fuller reads under a steady stream; none of its delay while a backlog waits. */
@Timeout(60)
class OutboxRelayLingerTest {
    private static final Duration STREAM = Duration.ofSeconds(2);

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();

    @Test
    void underASteadyStreamWokenAfterEachCommitTheRelayReadsAtMostOncePerLinger() throws Exception {
        Duration linger = Duration.ofMillis(200);
        RecordingPublisher publisher = new RecordingPublisher("a", log);
        List<Long> ids = streamThrough(publisher, linger);

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        // One publish call per page (every event has a key of its own): the stream, one read per linger,
        // plus the read that found the first event and the last one after the stream ended.
        long mostReads = STREAM.toMillis() / linger.toMillis() + 3;
        assertTrue(publisher.calls() <= mostReads, publisher.calls() + " publish calls for " + ids.size()
                + " events over " + STREAM + ", at most " + mostReads + " expected");
    }

    @Test
    void withoutALingerEachCommitIsReadAtOnceInAPageOfItsOwn() {
        // One commit at a time, the next only after the last was published: each is a read of its own,
        // and 20 of them take far less than 20 lingers of a second would. No rate is assumed, so a
        // loaded machine slows the test without failing it.
        RecordingPublisher publisher = new RecordingPublisher("a", log);
        OutboxRelayConfig config = outbox.config("a").batchSize(1000).linger(Duration.ZERO).build();
        List<Long> ids = new ArrayList<>();
        long started;
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build()) {
            relay.start();
            Await.until("partitions held", Duration.ofSeconds(20), () -> relay.heldPartitions().size() == 8);
            started = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                long id = outbox.insert("t", "orders", "key-" + i, "{}");
                ids.add(id);
                relay.wakeUp();
                outbox.awaitStatus(List.of(id), "published", Duration.ofSeconds(10));
            }
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        assertEquals(20, publisher.calls(), "each commit published by a read of its own");
        assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "20 commits read at once took " + took);
    }

    @Test
    void aBacklogOfFullPagesIsReadPageAfterPageWithoutLingering() {
        outbox.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " SELECT 't', 'orders', 'key-' || n, '{}' FROM generate_series(1, 300) n ORDER BY n");
        List<Long> ids = outbox.longs("SELECT id FROM outbox_events");
        OutboxRelayConfig config = outbox.config("a").batchSize(10).linger(Duration.ofSeconds(1)).build();
        long started = System.nanoTime();
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, new RecordingPublisher("a", log)).config(config).build()) {
            relay.start();
            // 30 pages: lingering after each would take 30 s.
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(10));
        }
        assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(Duration.ofSeconds(10)) < 0);
    }

    @Test
    void aKeyCutAtMaxEventsPerKeyIsReadOnWithoutLingering() {
        List<Long> ids = outbox.insertMany("t", "orders", "hot", 100);
        OutboxRelayConfig config = outbox.config("a").batchSize(50).maxEventsPerKey(5).linger(Duration.ofSeconds(1))
                .build();
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, new RecordingPublisher("a", log)).config(config).build()) {
            relay.start();
            // 20 pages of 5: lingering after each would take 20 s.
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(10));
        }
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    @Test
    void stoppingEndsALingerAtOnce() {
        OutboxRelayConfig config = outbox.config("a").linger(Duration.ofSeconds(1)).build();
        try (HikariDataSource pool = outbox.newPool(3)) {
            OutboxRelay relay = OutboxRelay.builder(pool, new RecordingPublisher("a", log)).config(config).build();
            relay.start();
            Await.until("partitions held", Duration.ofSeconds(20), () -> relay.heldPartitions().size() == 8);
            long id = outbox.insert("t", "orders", "k", "{}");
            relay.wakeUp();
            Await.until("published", Duration.ofSeconds(10), () -> log.publicationCount(id) == 1);

            long stopping = System.nanoTime();
            relay.stop();
            Duration took = Duration.ofNanos(System.nanoTime() - stopping);
            assertTrue(took.compareTo(Duration.ofMillis(700)) < 0, "stop took " + took + " while the relay lingered");
        }
    }

    /** Commits one event every 5 ms for {@link #STREAM}, each of its own key, waking the relay after each commit. */
    private List<Long> streamThrough(RecordingPublisher publisher, Duration linger) throws InterruptedException {
        OutboxRelayConfig config = outbox.config("a").batchSize(1000).linger(linger).build();
        List<Long> ids = new ArrayList<>();
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build()) {
            relay.start();
            Await.until("partitions held", Duration.ofSeconds(20), () -> relay.heldPartitions().size() == 8);
            long end = System.nanoTime() + STREAM.toNanos();
            for (int i = 0; System.nanoTime() < end; i++) {
                ids.add(outbox.insert("t", "orders", "key-" + i, "{}"));
                relay.wakeUp();
                Thread.sleep(5); // time itself: a stream of commits over STREAM
            }
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
        }
        return ids;
    }
}

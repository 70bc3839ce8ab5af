package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * positionWriteInterval: a relay keeping up writes its positions at most once per interval, and
 * whenever a read finds nothing, before it releases partitions and when it stops, so that the next
 * owner of a partition publishes nothing again after a hand-over.
 */
@Timeout(90)
class OutboxRelayPositionWritesTest {
    /** Long enough that only the writes this test is about happen during a stream. */
    private static final Duration LONG_INTERVAL = Duration.ofSeconds(9);

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();

    /** Records the transaction of every update that moves a stored position (lease renewals do not). */
    @BeforeEach
    void countPositionWrites() {
        String schema = '"' + outbox.schema() + '"';
        outbox.execute("CREATE TABLE position_writes (txid xid8 NOT NULL)");
        outbox.execute("CREATE FUNCTION record_position_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                + " IF NEW.consumed_snapshot::text IS DISTINCT FROM OLD.consumed_snapshot::text"
                + " OR NEW.batch_snapshot::text IS DISTINCT FROM OLD.batch_snapshot::text"
                + " OR NEW.batch_cursor IS DISTINCT FROM OLD.batch_cursor THEN"
                + " INSERT INTO " + schema + ".position_writes VALUES (pg_current_xact_id()); END IF;"
                + " RETURN NEW; END $$");
        outbox.execute("CREATE TRIGGER position_write BEFORE UPDATE ON outbox_relay_partitions"
                + " FOR EACH ROW EXECUTE FUNCTION record_position_write()");
    }

    @Test
    void underASteadyStreamTheRelayWritesItsPositionsAtMostOncePerInterval() throws Exception {
        Duration interval = Duration.ofMillis(500);
        Duration stream = Duration.ofSeconds(2);
        List<Long> ids;
        try (Running a = start(streaming("a").positionWriteInterval(interval))) {
            ids = stream(stream, a);
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
        }

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        // One write per interval of the stream, the one after the stream ended and one of slack.
        long most = stream.toMillis() / interval.toMillis() + 2;
        long writes = positionWrites();
        assertTrue(writes <= most, writes + " position writes over a " + stream + " stream of " + ids.size()
                + " events, at most " + most + " expected");
    }

    @Test
    void withAZeroIntervalTheSameStreamWritesAfterEveryPage() throws Exception {
        List<Long> ids;
        try (Running a = start(streaming("a").positionWriteInterval(Duration.ZERO))) {
            ids = stream(Duration.ofSeconds(2), a);
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
        }

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        // The linger (50 ms) allows up to 40 reads in the stream; on a loaded machine there are fewer.
        assertTrue(positionWrites() > 3 * 6, positionWrites() + " position writes, expected one per page");
    }

    @Test
    void aReadThatFindsNothingWritesThePositionsAtOnce() {
        try (Running a = start(writingRarely("a"))) {
            Await.until("partitions held", Duration.ofSeconds(20), () -> a.relay.heldPartitions().size() == 8);
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                ids.add(outbox.insert("t", "orders", "key-" + i, "{}"));
            }
            a.relay.wakeUp();
            long started = System.nanoTime();
            // outbox_event_states reads the stored positions: far sooner than the interval.
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(5));
            assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(LONG_INTERVAL.dividedBy(2)) < 0);
        }
    }

    @Test
    void aGracefulStopWritesItsPositionsSoTheNextOwnerPublishesNothingAgain() throws Exception {
        OutboxRelayConfig.Builder config = writingRarely("a");
        Running a = start(config);
        AtomicBoolean streaming = new AtomicBoolean(true);
        List<Long> ids = new ArrayList<>();
        ExecutorService writerThread = Executors.newSingleThreadExecutor();
        Future<?> writer = writerThread.submit(() -> {
            for (int i = 0; streaming.get(); i++) {
                List<Long> committed = tenEvents(i);
                synchronized (ids) {
                    ids.addAll(committed);
                }
                a.relay.wakeUp();
                Thread.sleep(5); // time itself: a stream of commits
            }
            return null;
        });
        Await.until("a published part of the stream", Duration.ofSeconds(20), () -> log.publications().size() > 500);
        a.close();
        try (Running b = start(config.instanceId("b"))) {
            Await.until("b published part of the stream", Duration.ofSeconds(20),
                    () -> log.publications().stream().anyMatch(id -> "b".equals(log.firstPublisher(id))));
            streaming.set(false);
            writer.get(10, TimeUnit.SECONDS);
            writerThread.shutdown();
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
        }

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    @Test
    void partitionsReleasedToANewRelayCarryTheirPositionsWithThem() throws Exception {
        OutboxRelayConfig.Builder config = writingRarely("a");
        List<Long> ids;
        try (Running a = start(config)) {
            Await.until("a holds every partition", Duration.ofSeconds(20), () -> a.relay.heldPartitions().size() == 8);
            Running[] b = new Running[1];
            try {
                ids = stream(Duration.ofSeconds(3), a, () -> {
                    if (b[0] == null && log.publications().size() > 500) {
                        b[0] = start(config.instanceId("b"));
                    }
                });
                Await.until("a released half its partitions to b", Duration.ofSeconds(20),
                        () -> a.relay.heldPartitions().size() == 4 && b[0].relay.heldPartitions().size() == 4);
                List<Long> more = stream(Duration.ofMillis(500), b[0]);
                ids.addAll(more);
                outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
            } finally {
                if (b[0] != null) {
                    b[0].close();
                }
            }
        }

        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
        assertTrue(ids.stream().anyMatch(id -> "b".equals(log.firstPublisher(id))), "b published part of the stream");
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    /**
     * A relay that reads a stream of {@link #stream} in pages that are never full (a full page writes at
     * once) and never empty (an empty read writes too): pages of up to 500, one read per 50 ms.
     */
    private OutboxRelayConfig.Builder streaming(String instanceId) {
        return outbox.config(instanceId).batchSize(500).linger(Duration.ofMillis(50));
    }

    /** Positions written only when the behaviour under test writes them: leases that outlast a long interval. */
    private OutboxRelayConfig.Builder writingRarely(String instanceId) {
        return streaming(instanceId).positionWriteInterval(LONG_INTERVAL).leaseDuration(Duration.ofSeconds(20));
    }

    private long positionWrites() {
        return outbox.number("SELECT count(DISTINCT txid) FROM position_writes");
    }

    /** A started relay with a pool of its own; closing it stops the relay gracefully, then closes the pool. */
    private record Running(OutboxRelay relay, HikariDataSource pool) implements AutoCloseable {
        @Override
        public void close() {
            relay.stop();
            pool.close();
        }
    }

    private Running start(OutboxRelayConfig.Builder config) {
        OutboxRelayConfig built = config.build();
        HikariDataSource pool = outbox.newPool(3);
        OutboxRelay relay = OutboxRelay.builder(pool, new RecordingPublisher(built.instanceId(), log)).config(built).build();
        relay.start();
        return new Running(relay, pool);
    }

    private List<Long> stream(Duration length, Running relay) throws InterruptedException {
        return stream(length, relay, () -> { });
    }

    /**
     * Commits 10 events over 10 of 50 keys every 5 ms for {@code length}, waking the relay after each
     * commit, and runs {@code each} after each: every read of a relay lingering 50 ms finds events of
     * every partition, so no read comes up empty (which would write the positions) while the stream lasts.
     */
    private List<Long> stream(Duration length, Running relay, Runnable each) throws InterruptedException {
        Await.until("partitions held", Duration.ofSeconds(20), () -> !relay.relay.heldPartitions().isEmpty());
        List<Long> ids = new ArrayList<>();
        long end = System.nanoTime() + length.toNanos();
        for (int i = 0; System.nanoTime() < end; i++) {
            ids.addAll(tenEvents(i));
            relay.relay.wakeUp();
            each.run();
            Thread.sleep(5); // time itself: a stream of commits over length
        }
        return ids;
    }

    /** The {@code i}-th commit of a stream: 10 events of keys {@code key-(10i+1 .. 10i+10) mod 50}, in id order. */
    private List<Long> tenEvents(int i) {
        return outbox.longs("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " SELECT 't', 'orders', 'key-' || ((" + i + " * 10 + n) % 50), '{}'"
                + " FROM generate_series(1, 10) n ORDER BY n RETURNING id");
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.testing.Await;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The next page is read while the current one is published: what was read ahead is published only as if
 * it had been read after the page before it settled. Pages of 2 events, one partition, driven by hand
 * (one {@link OutboxDispatcher#dispatchBatch()} per page) except in the accounting test.
 */
@Timeout(120)
class OutboxRelayReadAheadTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final RecordingPublisher publisher = new RecordingPublisher("relay", log);
    private TimeLimitedPublisher timeLimited;

    @AfterEach
    void tearDown() {
        publisher.openGate();
        if (timeLimited != null) {
            timeLimited.shutdown();
        }
    }

    /** Five events, each of a key of its own: pages of 2 make three pages of them. */
    private List<Long> fiveEventsOfFiveKeys() {
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(outbox.insert("t", "orders", "k" + i, "{}"));
        }
        return ids;
    }

    /** One partition, pages of 2, retries an hour apart: nothing is retried unless the test makes it due. */
    private OutboxRelayConfig config(String instance) {
        return builder(instance).build();
    }

    private OutboxRelayConfig.Builder builder(String instance) {
        return outbox.config(instance).partitions(1).batchSize(2).maxEventsPerKey(2).leaseDuration(Duration.ofSeconds(30))
                .renewalInterval(Duration.ofSeconds(5)).publishTimeout(Duration.ofSeconds(10))
                .backoffBase(Duration.ofHours(1)).backoffMax(Duration.ofHours(1)).readAhead(true);
    }

    @Test
    void withReadAheadOffEachPageIsReadAfterThePageBeforeSettled() throws Exception {
        List<Long> ids = fiveEventsOfFiveKeys();
        OutboxRelayConfig config = builder("relay").readAhead(false).build();
        PartitionLeases leases = leases(config);
        assertEquals(1, leases.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, leases);

        assertEquals(2, dispatcher.dispatchBatch());
        assertEquals(2, dispatcher.dispatchBatch());
        assertEquals(1, dispatcher.dispatchBatch());

        assertEquals(0, dispatcher.pagesReadAhead());
        assertEquals(ids, log.publications());
    }

    private PartitionLeases leases(OutboxRelayConfig config) {
        PartitionLeases leases = new PartitionLeases(OutboxRelay.jdbi(outbox.dataSource(), config), config,
                new RelaySql(config.schema()));
        leases.prepare();
        return leases;
    }

    private OutboxDispatcher dispatcher(OutboxRelayConfig config, PartitionLeases leases) {
        return dispatcher(config, leases, publisher);
    }

    private OutboxDispatcher dispatcher(OutboxRelayConfig config, PartitionLeases leases, Publisher broker) {
        Jdbi jdbi = OutboxRelay.jdbi(outbox.dataSource(), config);
        timeLimited = new TimeLimitedPublisher(broker, config.publishTimeout(), "read-ahead-publish");
        RelaySql sql = new RelaySql(config.schema());
        return new OutboxDispatcher(new OutboxPositions(outbox.dataSource(), jdbi, config, sql), new RetryQueue(jdbi, config, sql), leases,
                timeLimited, config, OutboxRelayListener.NONE,
                new PublisherOutage(config.instanceId(), config.backoffBase(), config.backoffMax()),
                new RelayStats(jdbi, sql, config.instanceId()));
    }

    @Test
    void aKeysEventReadAheadFollowsItsFailedPredecessorIntoRetriesInsteadOfOvertakingIt() throws Exception {
        long failing = outbox.insert("t", "orders", "k", "{}");
        long other = outbox.insert("t", "orders", "a", "{}");
        long follower = outbox.insert("t", "orders", "k", "{}");
        long another = outbox.insert("t", "orders", "b", "{}");
        outbox.insert("t", "orders", "c", "{}");
        OutboxRelayConfig config = config("relay");
        PartitionLeases leases = leases(config);
        assertEquals(1, leases.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, leases);
        publisher.failing(e -> e.id() == failing);

        // Page 1 [failing, other]: the next page [follower, another] is read while it is published.
        assertEquals(2, dispatcher.dispatchBatch());
        assertEquals(1, outbox.attempts(failing));
        assertTrue(log.published(other));
        // Page 2, as read ahead: it was read before page 1 put 'failing' into outbox_retries.
        assertEquals(2, dispatcher.dispatchBatch());

        assertEquals(1, dispatcher.pagesReadAhead(), "page 2 was the page read ahead");
        assertNull(publisher.received(follower), "the key's next event is not sent while its predecessor waits to be retried");
        assertTrue(log.published(another), "other keys of the page go on");
        assertEquals(1, outbox.number("SELECT count(*) FROM outbox_retries WHERE event_id = " + follower
                + " AND status = 'pending' AND attempts = 0"), "it followed its predecessor into outbox_retries");
        assertEquals("pending", outbox.status(follower));

        publisher.failing(e -> false);
        outbox.execute("UPDATE outbox_retries SET next_attempt_at = now() WHERE event_id = " + failing);
        Await.until("the key's two events are published", Duration.ofSeconds(30), () -> {
            dispatcher.dispatchBatch();
            return log.published(follower);
        });
        assertEquals(List.of(failing, follower), log.firstPublicationsByKey().get("t/orders/k"),
                "the failed event went first, then the one read ahead behind it");
        assertEquals(1, log.publicationCount(follower));
    }

    @Test
    void aLeaseLostWhileThePageAfterIsReadAheadPublishesNothingOfThatPage() throws Exception {
        List<Long> ids = fiveEventsOfFiveKeys();
        OutboxRelayConfig config = config("zombie");
        PartitionLeases zombie = leases(config);
        assertEquals(1, zombie.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, zombie);
        publisher.closeGate();
        Future<Integer> page = Executors.newSingleThreadExecutor().submit(dispatcher::dispatchBatch);
        // Page 1 is being published, page 2 was read ahead; meanwhile another relay takes the partition.
        assertTrue(publisher.awaitBlocked(20), "page 1 is under way");
        outbox.execute("UPDATE outbox_relay_partitions SET lease_expires_at = now() - interval '1 second'");
        PartitionLeases successor = leases(config("successor"));
        assertEquals(1, successor.acquire(1));
        zombie.renew(); // the lease thread's next cycle finds the lease gone
        publisher.openGate();

        assertEquals(2, page.get(30, TimeUnit.SECONDS));
        int calls = publisher.calls();
        assertEquals(0, dispatcher.dispatchBatch(), "with its partition gone, nothing read ahead is published");
        assertEquals(calls, publisher.calls());
        assertNull(publisher.received(ids.get(2)));
        assertNull(publisher.received(ids.get(3)));
        assertEquals(0, dispatcher.pagesReadAhead());
        assertEquals(Set.of(), zombie.held());
    }

    @Test
    void aBrokerOutageDuringAPageDropsThePageReadAheadAndTheRestIsReadAgainAfterIt() throws Exception {
        List<Long> ids = fiveEventsOfFiveKeys();
        long unreachable = ids.get(1);
        AtomicBoolean down = new AtomicBoolean(true);
        Publisher broker = new Publisher() {
            @Override
            public List<PublishResult> publish(List<OutboxEvent> events) {
                return events.stream().map(e -> {
                    if (down.get() && e.id() == unreachable) {
                        return PublishResult.unavailable("broker down");
                    }
                    log.acknowledged("relay", e);
                    return PublishResult.published();
                }).toList();
            }

            @Override
            public void close() {
            }
        };
        OutboxRelayConfig config = config("relay");
        PartitionLeases leases = leases(config);
        assertEquals(1, leases.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, leases, broker);

        assertEquals(2, dispatcher.dispatchBatch());
        assertTrue(log.published(ids.get(0)));
        assertFalse(log.published(unreachable));
        down.set(false);
        assertEquals(2, dispatcher.dispatchBatch());

        assertEquals(0, dispatcher.pagesReadAhead(), "the page read ahead during the outage was dropped");
        assertEquals(List.of(ids.get(0), ids.get(1), ids.get(2)), log.publications(),
                "the event the broker could not take went next, read again with the one after it");
        Await.until("every event is published", Duration.ofSeconds(30), () -> {
            dispatcher.dispatchBatch();
            return ids.stream().allMatch(log::published);
        });
        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "event " + id + " published once"));
    }

    @Test
    void aPageReadAheadUnderALeaseThatChangedIsReadAgainUnderTheNewOne() throws Exception {
        List<Long> ids = fiveEventsOfFiveKeys();
        OutboxRelayConfig config = config("relay");
        PartitionLeases leases = leases(config);
        assertEquals(1, leases.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, leases);
        assertEquals(2, dispatcher.dispatchBatch());
        // Between two pages the lease runs out, another relay takes it and gives it back, and this one takes it
        // again: a new epoch, under which page 2 was not read.
        outbox.execute("UPDATE outbox_relay_partitions SET lease_expires_at = now() - interval '1 second'");
        PartitionLeases other = leases(config("other"));
        assertEquals(1, other.acquire(1));
        leases.renew();
        assertEquals(Set.of(), leases.held());
        other.releaseAll();
        assertEquals(1, leases.acquire(1));

        assertEquals(2, dispatcher.dispatchBatch());
        assertEquals(0, dispatcher.pagesReadAhead(), "the page read under the old epoch was dropped, and read again");
        assertTrue(log.published(ids.get(2)) && log.published(ids.get(3)));
        Await.until("every event is published", Duration.ofSeconds(30), () -> {
            dispatcher.dispatchBatch();
            return ids.stream().allMatch(log::published);
        });
        ids.forEach(id -> assertEquals(1, log.publicationCount(id), "event " + id + " published once"));
        assertNotNull(publisher.received(ids.get(2)));
    }

    /**
     * Writers commit while the relay drains with pages read ahead: every event is published exactly once
     * (nothing fails here), and per key in id order.
     */
    @Test
    void everyEventWrittenWhileTheRelayReadsAheadIsPublishedExactlyOnceInKeyOrder() throws Exception {
        int writers = 4;
        int perWriter = 1500;
        Set<Long> written = ConcurrentHashMap.newKeySet();
        // A backlog first, so that pages are full and read ahead from the start, then writers alongside.
        for (int k = 0; k < 20; k++) {
            written.addAll(outbox.insertMany("t", "orders", "key-" + k, 100));
        }
        try (HikariDataSource relayPool = outbox.newPool(3);
             HikariDataSource writerPool = outbox.newPool(writers)) {
            OutboxRelay relay = OutboxRelay.builder(relayPool, publisher)
                    .config(outbox.config("relay").partitions(4).batchSize(100).readAhead(true).build()).build();
            relay.start();
            ExecutorService threads = Executors.newFixedThreadPool(writers);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    int writer = w;
                    done.add(threads.submit(() -> write(writerPool, writer, perWriter, written, relay)));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
                Await.until("every written event is published", Duration.ofSeconds(60),
                        () -> written.stream().allMatch(log::published));
                assertTrue(relay.pagesReadAhead() > 0, "pages were read ahead: " + relay.pagesReadAhead());
            } finally {
                threads.shutdownNow();
                relay.stop();
            }
        }
        assertEquals(2000 + writers * perWriter, written.size());
        List<Long> duplicates = written.stream().filter(id -> log.publicationCount(id) != 1).sorted().toList();
        assertEquals(List.of(), duplicates, "events not published exactly once");
        assertEquals(List.of(), log.keysOutOfOrder());
        assertEquals(Set.of(), log.concurrentlyPublished());
        assertEquals(written.size(), log.publications().size(), "nothing but the written events was published");
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_retries"));
    }

    /**
     * One writer: transactions of 1 to 3 events of one of 20 keys, committed one after another (one key per
     * transaction: the key locks that order each key's writers are then never taken in two orders).
     */
    private static void write(HikariDataSource pool, int writer, int events, Set<Long> written, OutboxRelay relay) {
        try (Connection c = pool.getConnection();
             PreparedStatement insert = c.prepareStatement("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                     + " VALUES ('t', 'orders', ?, jsonb_build_object('writer', ?::int)) RETURNING id")) {
            c.setAutoCommit(false);
            int n = 0;
            while (n < events) {
                List<Long> ids = new ArrayList<>();
                String key = "key-" + ((n * 7 + writer) % 20);
                for (int i = 0; i <= (n + writer) % 3 && n < events; i++, n++) {
                    insert.setString(1, key);
                    insert.setInt(2, writer);
                    try (var rs = insert.executeQuery()) {
                        rs.next();
                        ids.add(rs.getLong(1));
                    }
                }
                c.commit();
                written.addAll(ids);
                relay.wakeUp();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}

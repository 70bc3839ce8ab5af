package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The broker or the database goes away for a while; the relay keeps its backlog and drains it after. */
@Timeout(90)
class OutboxRelayOutageTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();

    private List<Long> insertAcrossKeys(int count, int from) {
        List<Long> ids = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            ids.add(outbox.insert("t", "orders", "key-" + (i % 20), "{\"i\": " + i + "}"));
        }
        return ids;
    }

    @Test
    void aBacklogBuiltUpWhileTheBrokerIsDownDrainsInOrderWhenItIsBack() {
        RecordingPublisher publisher = new RecordingPublisher("a", log).down(true);
        List<Long> ids = insertAcrossKeys(200, 0);
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").build()).build()) {
            relay.start();
            Await.until("every key's first event was tried twice", Duration.ofSeconds(30),
                    () -> outbox.count("attempts >= 2") >= 20);
            ids.addAll(insertAcrossKeys(100, 200));
            assertEquals(0, outbox.count("status <> 'pending'"), "nothing is published or given up while the broker is down");
            assertEquals(20, outbox.count("attempts > 0"), "only each key's first event is tried");

            publisher.down(false);

            outbox.awaitStatus(ids, "published", Duration.ofSeconds(40));
        }
        ids.forEach(id -> assertTrue(log.published(id), "event " + id));
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    @Test
    void theRelaySurvivesItsDatabaseConnectionsBeingKilledAndLosesNothing() throws Exception {
        String application = "relay-outage-" + UUID.randomUUID();
        RecordingPublisher publisher = new RecordingPublisher("a", log).delayMillis(5);
        List<Long> ids = insertAcrossKeys(100, 0);
        try (HikariDataSource pool = pool(application);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").build()).build()) {
            relay.start();
            outbox.awaitStatus(ids.subList(0, 20), "published", Duration.ofSeconds(30));

            // About three seconds in which every connection the relay opens is killed within 50 ms.
            long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            int from = 100;
            long killed = 0;
            while (System.nanoTime() < until) {
                killed += outbox.number("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        + " WHERE application_name = '" + application + "'");
                ids.addAll(insertAcrossKeys(5, from));
                from += 5;
                Thread.sleep(50); // time itself: paces the writes over the 3 s of killing
            }
            assertTrue(killed > 0, "the relay's connections were killed");

            outbox.awaitStatus(ids, "published", Duration.ofSeconds(40));
            assertTrue(relay.heldPartitions().size() == 8, "the relay holds its partitions again");
        }
        ids.forEach(id -> assertTrue(log.published(id), "event " + id));
        assertEquals(List.of(), log.keysOutOfOrder());
    }

    /** A pool whose connections carry an application name, so the test can find and kill them. */
    private HikariDataSource pool(String application) {
        TestDatabase db = TestDatabase.get();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.url());
        if (db.user() != null) {
            config.setUsername(db.user());
        }
        if (db.password() != null) {
            config.setPassword(db.password());
        }
        config.addDataSourceProperty("ApplicationName", application);
        config.setMaximumPoolSize(3);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(2000);
        return new HikariDataSource(config);
    }
}

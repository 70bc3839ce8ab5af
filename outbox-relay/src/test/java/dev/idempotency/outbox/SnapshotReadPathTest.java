package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.Await;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The publish path reads committed events by snapshot difference: long-running transactions neither
 * lose nor reorder events, a failing event and its key's later events move to outbox_retries while
 * other keys go on, and publishing writes nothing per event.
 */
@Timeout(120)
class SnapshotReadPathTest {
    /** The executor's advisory lock space for outbox ordering keys (ExecutorSql.OUTBOX_LOCK_SPACE). */
    private static final int OUTBOX_LOCK_SPACE = 0x1DE3_0B0C;

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final RecordingPublisher publisher = new RecordingPublisher("a", log);

    private PostgresIdempotentExecutor executor() {
        return PostgresIdempotentExecutor.builder(outbox.dataSource()).config(IdempotencyConfig.builder()
                .schema(outbox.schema()).waitBudget(Duration.ofSeconds(60)).build()).build();
    }

    /** Commits one event of key {@code partitionKey} (tenant t, topic orders) through the executor. */
    private static void emit(PostgresIdempotentExecutor executor, String request, String partitionKey) {
        executor.run(request, "t", String.class, tx -> {
            tx.outbox().publish("orders", partitionKey, Map.of("request", request));
            return request;
        });
    }

    @Test
    void anEventOfALongRunningTransactionIsPublishedWhenItCommitsAndItsKeysLaterEventAfterIt() throws Exception {
        PostgresIdempotentExecutor executor = executor();
        ExecutorService callers = Executors.newSingleThreadExecutor();
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").build()).build();
             HikariDataSource sessions = outbox.newPool(2);
             Connection unrelated = sessions.getConnection();
             Connection longRunning = sessions.getConnection()) {
            relay.start();
            // An unrelated transaction holding an xid, open throughout: it is in every snapshot's xip list.
            unrelated.setAutoCommit(false);
            try (Statement s = unrelated.createStatement()) {
                s.execute("SELECT pg_current_xact_id()");
            }
            // The long transaction writes key K's first event the way the executor does: lock the key, then insert.
            longRunning.setAutoCommit(false);
            long first = insertUnderKeyLock(longRunning, "K");
            // A later commit of K waits for that lock behind it, as the executor's writers do.
            Future<?> later = callers.submit(() -> emit(executor, "k-later", "K"));

            for (int i = 0; i < 40; i++) {
                emit(executor, "other-" + i, "other-" + (i % 4));
            }
            Await.until("40 events of other keys published", Duration.ofSeconds(30),
                    () -> outbox.count("partition_key LIKE 'other-%' AND status = 'published'") == 40);
            assertNull(publisher.received(first), "the open transaction's event is not visible, so not published");
            assertFalse(later.isDone(), "K's later commit waits for the long transaction's lock");

            longRunning.commit();
            later.get(30, TimeUnit.SECONDS);
            for (int i = 40; i < 60; i++) {
                emit(executor, "other-" + i, "other-" + (i % 4));
            }
            Await.until("every event published", Duration.ofSeconds(30),
                    () -> outbox.count("status <> 'published'") == 0);

            List<Long> ids = outbox.longs("SELECT id FROM outbox_events ORDER BY id");
            assertEquals(62, ids.size());
            ids.forEach(id -> assertEquals(1, log.publicationCount(id), "publications of event " + id));
            List<Long> keyK = outbox.longs("SELECT id FROM outbox_events WHERE partition_key = 'K' ORDER BY id");
            assertEquals(first, keyK.get(0), "the long transaction drew K's lower id");
            assertEquals(keyK, log.firstPublicationsByKey().get("t/orders/K"), "K in id order, which is its commit order");
            assertEquals(List.of(), log.keysOutOfOrder());
            unrelated.rollback();
        } finally {
            callers.shutdownNow();
        }
    }

    @Test
    void aFailedEventAndItsKeysLaterEventsWaitInOutboxRetriesAndFollowInKeyOrderWhileOtherKeysGoOn() {
        List<Long> stuck = new ArrayList<>();
        List<Long> flowing = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            stuck.add(outbox.insert("t", "orders", "stuck", "{}"));
            flowing.add(outbox.insert("t", "orders", "flowing-" + i, "{}"));
        }
        long failing = stuck.get(0);
        publisher.failing(e -> e.id() == failing && e.attempt() == 1);
        // One partition, so both keys share it; a long backoff keeps the retry waiting while we look.
        OutboxRelayConfig config = outbox.config("a").partitions(1)
                .backoffBase(Duration.ofSeconds(3)).backoffMax(Duration.ofSeconds(3)).build();
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(config).build()) {
            relay.start();
            outbox.awaitStatus(flowing, "published", Duration.ofSeconds(20));
            long late = outbox.insert("t", "orders", "stuck", "{}");
            long lateOther = outbox.insert("t", "orders", "flowing-0", "{}");
            outbox.awaitStatus(List.of(lateOther), "published", Duration.ofSeconds(20));
            stuck.add(late);

            assertEquals(stuck, outbox.longs("SELECT event_id FROM outbox_retries WHERE status = 'pending' ORDER BY event_id"),
                    "the failed event and every later event of its key, the one written after the failure included");
            assertEquals(List.of(1L, 0L, 0L, 0L, 0L),
                    outbox.longs("SELECT attempts FROM outbox_retries ORDER BY event_id"), "only the failed one was tried");
            assertEquals(1, outbox.count("status = 'pending' AND id = " + failing + " AND attempts = 1"
                    + " AND last_error IS NOT NULL"));
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_event_states WHERE partition_key = 'stuck'"
                    + " AND status <> 'pending'"));

            outbox.awaitStatus(stuck, "published", Duration.ofSeconds(30));
        }
        assertEquals(stuck, log.firstPublicationsByKey().get("t/orders/stuck"), "the stuck key in id order");
        assertEquals(List.of(), log.keysOutOfOrder());
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_retries"), "published retries are deleted");
    }

    @Test
    void publishingWritesNothingPerEventToTheOutboxTables() throws Exception {
        int events = 3000;
        try (HikariDataSource writer = outbox.newPool(1); Connection c = writer.getConnection();
             Statement s = c.createStatement()) {
            s.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                    + " SELECT 't', 'orders', (g % 50)::text, jsonb_build_object('n', g) FROM generate_series(1, " + events + ") g");
        }
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").batchSize(500).build()).build()) {
            relay.start();
            Await.until("every event published", Duration.ofSeconds(60),
                    () -> outbox.count("status = 'published'") == events);
        }
        // The relay's and the writer's sessions have ended, so their statistics are flushed.
        String stats = "SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_del), 0),"
                + " coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = '" + outbox.schema()
                + "' AND relname IN ('outbox_events_0', 'outbox_events_1', 'outbox_events_2')";
        Await.until("statistics of the inserts flushed", Duration.ofSeconds(30),
                () -> tableStats(stats).get(0) == events);
        assertEquals(List.of((long) events, 0L, 0L, 0L), tableStats(stats), "inserted, updated, deleted, dead tuples");
        assertEquals(events, log.publications().size());
    }

    @Test
    void aRelayKeepsFindingNewEventsByIndexAfterAGenerationOutgrewItsStatistics() throws Exception {
        // As autovacuum would leave them for a while: statistics taken while the generation was small. At 60
        // rows the plan cached without RelaySql.INDEX_READS scans the generation; at 200 it already used the index.
        outbox.execute("ALTER TABLE outbox_events_0 SET (autovacuum_enabled = off)");
        outbox.insertMany("t", "orders", "small", 60);
        outbox.execute("ANALYZE outbox_events_0, outbox_events_1, outbox_events_2");
        String generationScans = "SELECT seq_scan, 0, 0, 0 FROM pg_stat_user_tables WHERE schemaname = '" + outbox.schema()
                + "' AND relname = 'outbox_events_0'";
        try (HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").batchSize(1000).build()).build()) {
            relay.start();
            Await.until("the small generation published", Duration.ofSeconds(30),
                    () -> outbox.count("status = 'published'") == 60);
            // The relay polls several times a second: long enough for PostgreSQL to cache plans of its reads.
            Thread.sleep(1500);
            // Events of 5,000 keys in one transaction: it locks the outbox instead of each key (V8).
            outbox.execute("SELECT outbox_lock_for_bulk_write(); INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                    + " SELECT 't', 'orders', 'k' || (g % 5000), '{}' FROM generate_series(1, 50000) g");
            Await.until("the grown generation published", Duration.ofSeconds(60),
                    () -> outbox.count("status = 'published'") == 50_060);
            // A backend reports its statistics at most once a second; the relay's go on polling meanwhile.
            Thread.sleep(1500);
            long before = tableStats(generationScans).get(0);
            Thread.sleep(2500); // time itself: the relay polls for this long
            long after = tableStats(generationScans).get(0);

            assertEquals(before, after, "sequential scans of the 50,060-event generation while the relay polled for new events");
        }
    }

    @Test
    void theRelaysIndexReadsPlanNothingForJitCompilation() throws Exception {
        // The one-row lookup of V7's server gate, which every read runs: with sequential scans off it costs
        // 10^10, and PostgreSQL JIT-compiled it at each read (tens of milliseconds of the backend's CPU).
        String gateLookup = "EXPLAIN SELECT 1 FROM \"" + outbox.schema() + "\".outbox_relay_server"
                + " WHERE token = '00000000-0000-0000-0000-000000000000' AND postmaster_started_at = pg_postmaster_start_time()";
        try (Connection c = outbox.dataSource().getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL jit = on");
            s.execute("SELECT set_config('enable_seqscan', 'off', true)");
            Assumptions.assumeTrue(plan(s, gateLookup).contains("JIT:"),
                    "this PostgreSQL JIT-compiles nothing (built without LLVM): nothing to show");
            s.execute(RelaySql.INDEX_READS);
            String plan = plan(s, gateLookup);
            c.rollback();

            assertFalse(plan.contains("JIT:"), "the gate's lookup planned after RelaySql.INDEX_READS:\n" + plan);
        }
    }

    private static String plan(Statement s, String explain) throws SQLException {
        StringBuilder plan = new StringBuilder();
        try (ResultSet rs = s.executeQuery(explain)) {
            while (rs.next()) {
                plan.append(rs.getString(1)).append('\n');
            }
        }
        return plan.toString();
    }

    @Test
    void theRelaysIndexReadsLeaveItsPooledConnectionsWithTheirOwnSettings() throws Exception {
        outbox.insertMany("t", "orders", "k", 30);
        String jit;
        try (Connection c = outbox.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW jit")) {
            rs.next();
            jit = rs.getString(1);
        }
        // Two connections: the relay's most; every one of them has served its reads when it stops.
        try (HikariDataSource pool = outbox.newPool(2)) {
            try (OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config("a").batchSize(10).build()).build()) {
                relay.start();
                Await.until("30 events published", Duration.ofSeconds(30), () -> outbox.count("status = 'published'") == 30);
                // Caught up, the relay goes on reading by index at its idle polls.
                Thread.sleep(300);
            }
            try (Connection first = pool.getConnection(); Connection second = pool.getConnection()) {
                for (Connection connection : List.of(first, second)) {
                    try (Statement s = connection.createStatement();
                         ResultSet rs = s.executeQuery("SELECT current_setting('enable_seqscan'), current_setting('jit')")) {
                        rs.next();
                        assertEquals("on", rs.getString(1), "enable_seqscan on a connection the relay read with");
                        assertEquals(jit, rs.getString(2), "jit on a connection the relay read with, as the server set it");
                    }
                }
            }
        }
    }

    private List<Long> tableStats(String sql) {
        try (Connection c = outbox.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = s.executeQuery(sql)) {
                rs.next();
                return List.of(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Takes the executor's lock on ordering key (t, orders, key) and inserts one event, in the open transaction. */
    private static long insertUnderKeyLock(Connection connection, String partitionKey) throws SQLException {
        try (PreparedStatement lock = connection.prepareStatement("SELECT pg_advisory_xact_lock(?, hashtext(?))")) {
            lock.setInt(1, OUTBOX_LOCK_SPACE);
            lock.setString(2, "t/orders/" + partitionKey);
            lock.execute();
        }
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO outbox_events"
                + " (tenant_id, topic, partition_key, payload) VALUES ('t', 'orders', ?, '{}') RETURNING id")) {
            insert.setString(1, partitionKey);
            try (ResultSet rs = insert.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}

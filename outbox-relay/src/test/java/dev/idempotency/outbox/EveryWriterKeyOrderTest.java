package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Design property 11 (issue 34): every writer of the outbox gets the per-key order the relay relies on.
 * Plain SQL INSERTs, an application's trigger on a business table and the executor write events of the
 * same few keys at once, several threads each, while a relay publishes; the plain writers do a little
 * more work between their INSERT and their COMMIT, as applications do. A watcher reads the outbox in a
 * loop: no snapshot may show a key's event without the key's earlier (lower id) events, which is what
 * makes id order the commit order the relay publishes in. Accounting is exact: every event a writer
 * committed is in the outbox once and was published, and per key in id order.
 */
@Timeout(180)
class EveryWriterKeyOrderTest {
    private static final String TENANT = "t";
    private static final String TOPIC = "orders";
    private static final List<String> KEYS = List.of("k0", "k1", "k2", "k3");
    private static final int THREADS_PER_WRITER = 3;
    private static final int TRANSACTIONS_PER_THREAD = 120;

    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();

    /** A committed event as its writer knows it: which writer, which thread, which of its transactions. */
    private record Written(String writer, int thread, int n) {
        String tag() {
            return writer + "-" + thread + "-" + n;
        }
    }

    @Test
    void plainSqlAnApplicationTriggerAndTheExecutorWritingTheSameKeysArePublishedEveryOneInCommitOrderPerKey()
            throws Exception {
        outbox.execute("""
                CREATE TABLE shipments (id bigserial PRIMARY KEY, partition_key text NOT NULL, tag text NOT NULL);
                CREATE FUNCTION shipment_event() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)
                    VALUES ('t', 'orders', NEW.partition_key, jsonb_build_object('tag', NEW.tag));
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER shipment_event AFTER INSERT ON shipments FOR EACH ROW EXECUTE FUNCTION shipment_event();
                CREATE TABLE business_rows (tag text NOT NULL)""");
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(outbox.dataSource())
                .config(IdempotencyConfig.builder().schema(outbox.schema()).waitBudget(Duration.ofSeconds(60)).build())
                .build();
        Set<String> committed = ConcurrentHashMap.newKeySet();
        RecordingPublisher publisher = new RecordingPublisher("a", log);
        AtomicBoolean writing = new AtomicBoolean(true);
        ExecutorService threads = Executors.newFixedThreadPool(3 * THREADS_PER_WRITER + 1);
        Watcher watcher = new Watcher();
        try (HikariDataSource writers = outbox.newPool(3 * THREADS_PER_WRITER);
             HikariDataSource watching = outbox.newPool(1);
             HikariDataSource relayPool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(relayPool, publisher).config(outbox.config("a").build()).build()) {
            relay.start();
            Future<?> watch = threads.submit(() -> watcher.watch(watching, writing));
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < THREADS_PER_WRITER; t++) {
                int thread = t;
                work.add(threads.submit(() -> plainSql(writers, thread, committed)));
                work.add(threads.submit(() -> applicationTrigger(writers, thread, committed)));
                work.add(threads.submit(() -> executorCalls(executor, thread, committed)));
            }
            for (Future<?> f : work) {
                f.get(120, TimeUnit.SECONDS);
            }
            writing.set(false);
            watch.get(30, TimeUnit.SECONDS);
            Await.until("every committed event published", Duration.ofSeconds(60),
                    () -> outbox.count("status <> 'published'") == 0);
        } finally {
            threads.shutdownNow();
        }

        // Exact accounting: each event a writer committed is in the outbox once, and nothing else is.
        Map<Long, String> tags = new TreeMap<>();
        Map<String, List<Long>> idsByKey = new TreeMap<>();
        queryEvents((id, key, tag) -> {
            tags.put(id, tag);
            idsByKey.computeIfAbsent(key, k -> new ArrayList<>()).add(id);
        });
        assertEquals(THREADS_PER_WRITER * TRANSACTIONS_PER_THREAD * 7 / 2, committed.size(),
                "plain SQL and trigger writers commit one event a transaction, the executor one or two");
        assertEquals(new TreeSet<>(committed), new TreeSet<>(tags.values()), "the outbox holds what the writers committed");
        assertEquals(committed.size(), tags.size(), "and each once");
        // Every committed event published (at least once), and per key in id order.
        List<Long> unpublished = tags.keySet().stream().filter(id -> !log.published(id)).toList();
        assertEquals(List.of(), unpublished, "committed events never published");
        int outOfOrder = outOfOrderDeliveries(log.firstPublicationsByKey());
        int holes = watcher.holes(idsByKey);
        assertEquals(0, outOfOrder, "events published after a later event of their key, of " + tags.size()
                + " (and " + holes + " snapshots showed a key's event without its earlier ones): " + log.keysOutOfOrder());
        // Commit order: no snapshot ever showed a key's event without that key's lower ids, so id order per key
        // is the order in which the key's events became visible, i.e. commit order.
        assertEquals(0, holes, "snapshots that showed a key's event without its earlier ones, of " + watcher.snapshots());
        assertTrue(watcher.snapshots() > 20, "the watcher read while the writers wrote: " + watcher.snapshots());
    }

    /** BEGIN; INSERT the event; a business row and a short pause; COMMIT. */
    private static void plainSql(HikariDataSource pool, int thread, Set<String> committed) {
        transactions(pool, "sql", thread, committed, "INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " VALUES ('" + TENANT + "', '" + TOPIC + "', ?, jsonb_build_object('tag', ?::text))");
    }

    /** BEGIN; INSERT a shipment, whose AFTER INSERT trigger writes the event; a business row and a short pause; COMMIT. */
    private static void applicationTrigger(HikariDataSource pool, int thread, Set<String> committed) {
        transactions(pool, "trigger", thread, committed, "INSERT INTO shipments (partition_key, tag) VALUES (?, ?)");
    }

    /**
     * The transactions of one thread of a plain JDBC writer: {@code write} (its parameters the partition key
     * and the event's tag) writes the event, then the business work, then COMMIT.
     */
    private static void transactions(HikariDataSource pool, String writer, int thread, Set<String> committed, String write) {
        try (Connection c = pool.getConnection();
             PreparedStatement event = c.prepareStatement(write);
             PreparedStatement work = c.prepareStatement("INSERT INTO business_rows (tag) SELECT ? FROM pg_sleep(?)")) {
            c.setAutoCommit(false);
            for (int n = 0; n < TRANSACTIONS_PER_THREAD; n++) {
                Written written = new Written(writer, thread, n);
                event.setString(1, key());
                event.setString(2, written.tag());
                event.executeUpdate();
                // The work an application does between writing its event and committing: a row, and up to 2 ms.
                work.setString(1, written.tag());
                work.setDouble(2, ThreadLocalRandom.current().nextDouble(0.002));
                work.executeUpdate();
                c.commit();
                committed.add(written.tag());
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** executor.run with a fresh key: one event, or every other call two events of two keys (locked in hash order). */
    private static void executorCalls(PostgresIdempotentExecutor executor, int thread, Set<String> committed) {
        for (int n = 0; n < TRANSACTIONS_PER_THREAD; n++) {
            Written first = new Written("executor", thread, n);
            Written second = new Written("executor", thread, n + TRANSACTIONS_PER_THREAD);
            boolean two = n % 2 == 1;
            String firstKey = key();
            String secondKey = KEYS.get((KEYS.indexOf(firstKey) + 1) % KEYS.size());
            executor.run("call-" + first.tag(), TENANT, String.class, tx -> {
                tx.outbox().publish(TOPIC, firstKey, Map.of("tag", first.tag()));
                if (two) {
                    tx.outbox().publish(TOPIC, secondKey, Map.of("tag", second.tag()));
                }
                return "ok";
            });
            committed.add(first.tag());
            if (two) {
                committed.add(second.tag());
            }
        }
    }

    private static String key() {
        return KEYS.get(ThreadLocalRandom.current().nextInt(KEYS.size()));
    }

    /** Events published after an event of their key with a higher id (first publications). */
    private static int outOfOrderDeliveries(Map<String, List<Long>> firstPublicationsByKey) {
        int outOfOrder = 0;
        for (List<Long> ids : firstPublicationsByKey.values()) {
            long highest = Long.MIN_VALUE;
            for (long id : ids) {
                if (id < highest) {
                    outOfOrder++;
                }
                highest = Math.max(highest, id);
            }
        }
        return outOfOrder;
    }

    private interface EventRow {
        void accept(long id, String key, String tag);
    }

    private void queryEvents(EventRow row) throws SQLException {
        try (Connection c = outbox.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, partition_key, payload ->> 'tag' FROM outbox_events ORDER BY id")) {
            while (rs.next()) {
                row.accept(rs.getLong(1), rs.getString(2), rs.getString(3));
            }
        }
    }

    /**
     * Reads the outbox in a loop, one snapshot per read, and keeps per snapshot and key the highest id
     * it showed and how many of the key's events it showed.
     */
    private static final class Watcher {
        private record Seen(long highest, int count) {
        }

        private final List<Map<String, Seen>> seen = new ArrayList<>();

        void watch(HikariDataSource pool, AtomicBoolean writing) {
            try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                // One more read after the writers stopped: it sees everything.
                boolean last = false;
                while (!last) {
                    last = !writing.get();
                    Map<String, Seen> snapshot = new HashMap<>();
                    try (ResultSet rs = s.executeQuery("SELECT partition_key, max(id), count(*) FROM outbox_events GROUP BY 1")) {
                        while (rs.next()) {
                            snapshot.put(rs.getString(1), new Seen(rs.getLong(2), rs.getInt(3)));
                        }
                    }
                    synchronized (this) {
                        seen.add(snapshot);
                    }
                    Thread.sleep(2); // time itself: the observer samples while the writers run
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        synchronized int snapshots() {
            return seen.size();
        }

        /**
         * Snapshot-and-key pairs that showed fewer of the key's events up to the highest id they showed
         * than were finally committed up to it: an earlier event of the key was not yet visible.
         */
        synchronized int holes(Map<String, List<Long>> committedIdsByKey) {
            int holes = 0;
            for (Map<String, Seen> snapshot : seen) {
                for (Map.Entry<String, Seen> entry : snapshot.entrySet()) {
                    List<Long> ids = committedIdsByKey.get(entry.getKey());
                    long upTo = ids.stream().filter(id -> id <= entry.getValue().highest()).count();
                    if (upTo != entry.getValue().count()) {
                        holes++;
                    }
                }
            }
            return holes;
        }
    }
}

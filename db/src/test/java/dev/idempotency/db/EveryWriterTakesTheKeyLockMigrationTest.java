package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.testing.LockWaits;
import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * V8: the outbox takes the ordering key's lock on every INSERT, then draws the id; a database at V6
 * upgrades with its events and ids as they were.
 */
@Timeout(60)
class EveryWriterTakesTheKeyLockMigrationTest {
    /** ExecutorSql.OUTBOX_LOCK_SPACE (0x1DE30B0C), the first key of the executor's advisory locks. */
    private static final int OUTBOX_LOCK_SPACE = 0x1DE3_0B0C;
    private static final String EVENT = "INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
            + "VALUES ('t1', 'payments', '%s', '{}') RETURNING id";

    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("v8").poolSize(4).build();

    @Test
    void fromV6TheEventsKeepTheirIdsAndNewOnesGoOnFromTheSequenceDrawnByTheTrigger() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "6");
        for (String key : List.of("a", "b", "a")) {
            schema.execute(EVENT.formatted(key));
        }
        List<String> before = strings("SELECT e::text FROM outbox_events e ORDER BY id");

        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "8");

        assertEquals(before, strings("SELECT e::text FROM outbox_events e ORDER BY id"));
        assertEquals(List.of("4", "5"), List.of(one(EVENT.formatted("a")), one(EVENT.formatted("c"))),
                "ids go on one at a time: none drawn by a default and thrown away");
        assertEquals(List.of("outbox_events false", "outbox_events_0 false", "outbox_events_1 false", "outbox_events_2 false"),
                strings("""
                        SELECT c.relname || ' ' || a.atthasdef FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                        WHERE c.relnamespace = current_schema()::regnamespace AND c.relname ~ '^outbox_events(_[0-9])?$'
                          AND a.attname = 'id' ORDER BY 1"""), "no default on id, on the table or its generations");
        assertEquals(List.of("outbox_events outbox_events_draw_id", "outbox_events_0 outbox_events_draw_id cloned",
                        "outbox_events_1 outbox_events_draw_id cloned", "outbox_events_2 outbox_events_draw_id cloned"),
                triggers());
        assertEquals(schema.name() + ".outbox_events_id_seq 1", one("""
                SELECT pg_get_serial_sequence('outbox_events', 'id') || ' ' || s.seqcache FROM pg_sequence s
                WHERE s.seqrelid = pg_get_serial_sequence('outbox_events', 'id')::regclass"""),
                "the relay's schema check still finds the sequence and its CACHE 1");
    }

    @Test
    void aPlainInsertHoldsItsKeysLockToCommitAndTheKeysNextWriterDrawsItsIdOnlyThen() throws Exception {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        ExecutorService second = Executors.newSingleThreadExecutor();
        try (Connection first = schema.dataSource().getConnection(); Connection other = schema.dataSource().getConnection()) {
            first.setAutoCommit(false);
            long firstId = Long.parseLong(one(first, EVENT.formatted("k")));
            assertFalse(tryExecutorLock(other, "t1/payments/k"), "the executor's lock of the key, held by a plain INSERT");
            assertTrue(tryExecutorLock(other, "t1/payments/other"), "other keys are free");

            Future<String> sameKey = second.submit(() -> one(EVENT.formatted("k")));
            LockWaits.awaitAdvisory(schema.dataSource(), OUTBOX_LOCK_SPACE, 1);
            long otherKeyId = Long.parseLong(one(other, EVENT.formatted("other")));
            assertFalse(sameKey.isDone());
            first.commit();

            long sameKeyId = Long.parseLong(sameKey.get(30, TimeUnit.SECONDS));
            assertEquals(List.of(firstId + 1, firstId + 2), List.of(otherKeyId, sameKeyId),
                    "the waiting writer drew its id after the key's lock, so after the other key's writer");
        } finally {
            second.shutdownNow();
        }
    }

    @Test
    void aRowCopiedInWithAnotherTransactionsIdKeepsItsIdAndTakesNoLockWhileAWritersOwnIdIsReplaced() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        try (Connection restore = schema.dataSource().getConnection(); Connection other = schema.dataSource().getConnection()) {
            restore.setAutoCommit(false);
            assertEquals("1000", one(restore, "INSERT INTO outbox_events (id, txid, tenant_id, topic, partition_key, payload) "
                    + "VALUES (1000, '5', 't1', 'payments', 'k', '{}') RETURNING id"));
            assertTrue(tryExecutorLock(other, "t1/payments/k"), "a copied row takes no lock");
            assertEquals("1", one(restore, "INSERT INTO outbox_events (id, tenant_id, topic, partition_key, payload) "
                    + "VALUES (2000, 't1', 'payments', 'k', '{}') RETURNING id"), "an id given with the writer's own txid is drawn anew");
            assertFalse(tryExecutorLock(other, "t1/payments/k"));
            restore.commit();
        }
    }

    @Test
    void insertsIntoAGenerationTableAndIntoAPartitionMadeLaterGoThroughTheTriggerToo() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        schema.execute("CREATE TABLE outbox_events_3 PARTITION OF outbox_events FOR VALUES IN (3)");
        assertTrue(triggers().contains("outbox_events_3 outbox_events_draw_id cloned"), triggers().toString());

        try (Connection writer = schema.dataSource().getConnection(); Connection other = schema.dataSource().getConnection()) {
            writer.setAutoCommit(false);
            assertEquals("1", one(writer, "INSERT INTO outbox_events_0 (generation, tenant_id, topic, partition_key, payload) "
                    + "VALUES (0, 't1', 'payments', 'direct', '{}') RETURNING id"));
            assertEquals("2", one(writer, "INSERT INTO outbox_events (generation, tenant_id, topic, partition_key, payload) "
                    + "VALUES (3, 't1', 'payments', 'later', '{}') RETURNING id"));
            assertFalse(tryExecutorLock(other, "t1/payments/direct"));
            assertFalse(tryExecutorLock(other, "t1/payments/later"));
            writer.commit();
        }
    }

    @Test
    void aBulkWriteLocksTheWholeOutboxInsteadOfEachKeyAndOtherWritersDrawTheirIdsAfterItCommits() throws Exception {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        ExecutorService second = Executors.newSingleThreadExecutor();
        try (Connection bulk = schema.dataSource().getConnection(); Connection other = schema.dataSource().getConnection()) {
            bulk.setAutoCommit(false);
            one(bulk, "SELECT outbox_lock_for_bulk_write()");
            assertEquals("20000", one(bulk, "WITH e AS (INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                    + "SELECT 't1', 'payments', 'k' || g, '{}' FROM generate_series(1, 20000) g RETURNING 1) SELECT count(*) FROM e"));
            assertEquals("0", one(bulk, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"),
                    "no key locks: 20,000 of them would fill a third of the default lock table");
            assertTrue(tryExecutorLock(other, "t1/payments/k1"));

            Future<String> plain = second.submit(() -> one(EVENT.formatted("k1")));
            LockWaits.awaitTable(schema.dataSource(), schema.name() + ".outbox_events", 1);
            assertFalse(plain.isDone());
            bulk.commit();

            assertEquals("20001", plain.get(30, TimeUnit.SECONDS), "drawn after the bulk write's ids");
            assertEquals("f", one(bulk, "SELECT coalesce(current_setting('idempotency.outbox_bulk_write', true), '') = current_schema()"),
                    "the bulk write's setting ends with its transaction");
            bulk.commit();
        } finally {
            second.shutdownNow();
        }
    }

    @Test
    void aTransactionThatWritesManyKeysWithoutAskingTakesTheWholeOutboxLockPastTwoHundredFiftySixRows() throws Exception {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        try (Connection backfill = schema.dataSource().getConnection(); Connection other = schema.dataSource().getConnection()) {
            backfill.setAutoCommit(false);

            // A backfill as users write it: one INSERT of 20,000 keys, with no call first.
            assertEquals("20000", one(backfill, "WITH e AS (INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                    + "SELECT 't1', 'payments', 'k' || g, '{}' FROM generate_series(1, 20000) g RETURNING 1) SELECT count(*) FROM e"));

            assertEquals("256", one(backfill, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"),
                    "key locks for the first 256 rows only, not 20,000 of them in the shared lock table");
            assertEquals("1", one(backfill, "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND granted"
                    + " AND relation = 'outbox_events'::regclass AND mode = 'ShareRowExclusiveLock'"), "the whole outbox's lock instead");
            assertTrue(tryExecutorLock(other, "t1/payments/k5000"), "later keys are not locked one by one");
            backfill.commit();
            assertEquals("20000", one(other, "SELECT count(DISTINCT id) FROM outbox_events"));
        }
    }

    /** The executor's lock call (ExecutorSql: pg_advisory_xact_lock(space, hashtext(ordering key))), tried. */
    private static boolean tryExecutorLock(Connection connection, String orderingKey) throws SQLException {
        try (var ps = connection.prepareStatement("SELECT pg_try_advisory_xact_lock(?, hashtext(?))")) {
            ps.setInt(1, OUTBOX_LOCK_SPACE);
            ps.setString(2, orderingKey);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private List<String> triggers() throws SQLException {
        return strings("""
                SELECT t.tgrelid::regclass::text || ' ' || t.tgname || CASE WHEN t.tgparentid <> 0 THEN ' cloned' ELSE '' END
                FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal ORDER BY 1""");
    }

    private String one(String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection()) {
            return one(c, sql);
        }
    }

    private static String one(Connection connection, String sql) throws SQLException {
        try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            assertTrue(rs.next(), sql);
            return rs.getString(1);
        }
    }

    private List<String> strings(String sql) throws SQLException {
        return FirstColumn.of(schema.dataSource(), sql);
    }
}

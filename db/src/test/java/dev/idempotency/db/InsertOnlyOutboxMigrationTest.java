package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Upgrading a V3 outbox to V4's insert-only one: every pending event carries over with its id,
 * message id and order; keys waiting for a retry keep waiting, with their attempts and backoff;
 * dead letters stay; published events go; ids go on from where they were.
 */
class InsertOnlyOutboxMigrationTest {
    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("v4").poolSize(2).build();

    @Test
    void pendingEventsRetriesAndDeadLettersCarryOverAndPublishedOnesGo() throws SQLException {
        migrateTo("2");
        // Written before V3: no message id; they keep none and are still sent under their decimal id.
        insertV3("old", "pending", 0);     // id 1
        insertV3("old", "published", 0);
        migrateTo("3");
        insertV3("a", "pending", 0);       // id 3
        insertV3("b", "pending", 2);       // its first attempt failed twice: waits for its retry
        insertV3("a", "published", 0);
        insertV3("a", "pending", 0);
        insertV3("b", "pending", 0);       // behind b's failed event
        insertV3("c", "dead", 20);
        insertV3("c", "pending", 0);       // after a dead letter: not held back by it
        insertV3("d", "pending", 0);       // a requeued dead letter, ahead of d's failing event: the relay
        insertV3("d", "pending", 1);       // diverts it behind d's retry in id order, so it need not be held here
        insertV3("a", "published", 0);    // id 12
        List<Map<String, Object>> before = rows("SELECT id, message_id, partition_key, status, attempts, next_attempt_at, "
                + "last_error, payload::text AS payload FROM outbox_events ORDER BY id");
        long lastId = count("SELECT max(id) FROM outbox_events");

        migrateTo("4");

        // Pending events not behind a failed attempt of their key: in the new table, same ids, message ids, payloads, in id order.
        assertEquals(project(byId(before, 1, 3, 6, 9, 10)),
                rows("SELECT id, message_id, partition_key, payload::text AS payload FROM outbox_events ORDER BY id"));
        assertNull(before.get(0).get("message_id"));
        assertEquals(1, count("SELECT count(DISTINCT txid) FROM outbox_events"), "all stamped with the migration's transaction");
        assertEquals(0, count("SELECT count(*) FROM outbox_events WHERE generation <> 0"));
        // Keys with a failed attempt: that event and every later pending event of the key wait in outbox_retries.
        List<Map<String, Object>> retries = rows("SELECT event_id AS id, message_id, partition_key, status, attempts, "
                + "next_attempt_at, last_error, payload::text AS payload FROM outbox_retries ORDER BY event_id");
        assertEquals(byId(before, 4, 7, 8, 11), retries);
        // What operators see: nothing published is left, and nothing pending was lost.
        assertEquals(List.of(), rows("SELECT id FROM outbox_event_states WHERE status = 'published'"));
        assertEquals(before.stream().filter(row -> row.get("status").equals("pending")).count(),
                count("SELECT count(*) FROM outbox_event_states WHERE status = 'pending'"));
        assertEquals(1, count("SELECT count(*) FROM outbox_event_states WHERE status = 'dead' AND attempts = 20"));
        // New events get ids after every old one, from a sequence that still hands out one id at a time.
        execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'a', '{}')");
        assertEquals(lastId + 1, count("SELECT max(id) FROM outbox_events"));
        assertEquals(1, count("SELECT cache_size FROM pg_sequences WHERE format('%I.%I', schemaname, sequencename)::regclass "
                + "= pg_get_serial_sequence('outbox_events', 'id')::regclass"));
        assertNotNull(rows("SELECT message_id FROM outbox_events WHERE id = " + (lastId + 1)).get(0).get("message_id"));
    }

    @Test
    void anEmptyOutboxMigratesToAnEmptyOne() throws SQLException {
        migrateTo("3");

        migrateTo("4");

        assertEquals(0, count("SELECT count(*) FROM outbox_events") + count("SELECT count(*) FROM outbox_retries"));
        assertEquals(0, count("SELECT current_generation FROM outbox_generation"));
        execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'a', '{}')");
        assertEquals(1, count("SELECT count(*) FROM outbox_event_states WHERE status = 'pending'"));
    }

    private void migrateTo(String version) {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), version);
    }

    /** An event as a V3 relay left it: published, dead after {@code attempts}, or pending after {@code attempts} failures. */
    private void insertV3(String key, String status, int attempts) throws SQLException {
        boolean failed = attempts > 0;
        execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, status, attempts, next_attempt_at, "
                + "last_error, published_at) VALUES ('t1', 'payments', '" + key + "', jsonb_build_object('n', "
                + "(SELECT count(*) FROM outbox_events)), '" + status + "', " + attempts + ", "
                + (failed ? "date_trunc('second', now()) + interval '5 minutes'" : "date_trunc('second', now())") + ", "
                + (failed ? "'HTTP 503'" : "NULL") + ", " + (status.equals("published") ? "now()" : "NULL") + ")");
    }

    private static List<Map<String, Object>> byId(List<Map<String, Object>> rows, long... ids) {
        List<Map<String, Object>> selected = new ArrayList<>();
        for (long id : ids) {
            selected.add(rows.stream().filter(row -> ((Number) row.get("id")).longValue() == id).findFirst().orElseThrow());
        }
        return selected;
    }

    private static List<Map<String, Object>> project(List<Map<String, Object>> rows) {
        List<Map<String, Object>> projected = new ArrayList<>();
        for (Map<String, Object> row : rows) {
            Map<String, Object> kept = new LinkedHashMap<>();
            for (String column : List.of("id", "message_id", "partition_key", "payload")) {
                kept.put(column, row.get(column));
            }
            projected.add(kept);
        }
        return projected;
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private long count(String sql) throws SQLException {
        Object value = rows(sql).get(0).values().iterator().next();
        return ((Number) value).longValue();
    }

    private List<Map<String, Object>> rows(String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            try (ResultSet rs = s.executeQuery(sql)) {
                ResultSetMetaData meta = rs.getMetaData();
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int i = 1; i <= meta.getColumnCount(); i++) {
                        row.put(meta.getColumnLabel(i), rs.getObject(i));
                    }
                    rows.add(row);
                }
            }
            return rows;
        }
    }
}

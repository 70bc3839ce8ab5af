package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Upgrading to V6: the keys and outbox tables' rules move to a domain and one constraint per table,
 * touching only the catalog (the rows, the tables' files and their indexes stay), and both tables refuse
 * every row they refused before, on insert and on update.
 */
class ChecksParsedOnceMigrationTest {
    private static final String VALID_ROWS = """
            INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, failure, lease_token, lease_expires_at, expires_at)
            VALUES ('t1', 'completed',       'completed',  '1', NULL, NULL, NULL, now() + interval '1 day'),
                   ('t1', 'declined',        'failed',     NULL, '{"code": "card_declined"}', NULL, NULL, now() + interval '1 day'),
                   ('t1', 'in progress',     'processing', NULL, NULL, NULL, NULL, now() + interval '1 day'),
                   ('t1', 'leased',          'processing', NULL, NULL, 3, now() + interval '1 hour', now() + interval '1 day'),
                   ('t1', 'unknown-outcome', 'failed',     NULL, '{"code": "lease_expired"}', 5,
                    now() - interval '1 hour', now() + interval '1 day'),
                   ('tenant with spaces', 'ü ключ 鍵', 'completed', '2', NULL, NULL, NULL, now() + interval '1 day')""";

    /** One row for each rule of V5's constraints on the keys table and the outbox, each breaking only that rule. */
    private static final List<String> REFUSED_INSERTS = List.of(
            row("''", "'k'", "'completed'", "NULL", "NULL", "NULL"),
            row("'t1'", "'   '", "'completed'", "NULL", "NULL", "NULL"),
            row("'t1'", "E'k\\x01'", "'completed'", "NULL", "NULL", "NULL"),
            row("E't\\n1'", "'k'", "'completed'", "NULL", "NULL", "NULL"),
            row("'t1'", "repeat('k', 256)", "'completed'", "NULL", "NULL", "NULL"),
            row("repeat('t', 256)", "'k'", "'completed'", "NULL", "NULL", "NULL"),
            row("'t1'", "'k'", "'done'", "NULL", "NULL", "NULL"),
            row("'t1'", "'k'", "'completed'", "'{\"code\": \"x\"}'", "NULL", "NULL"),
            row("'t1'", "'k'", "'failed'", "NULL", "NULL", "NULL"),
            row("'t1'", "'k'", "'processing'", "NULL", "7", "NULL"),
            row("'t1'", "'k'", "'processing'", "NULL", "NULL", "now()"),
            event("'t1'", "' '", "'p'", "'{}'"),
            event("'t1'", "'payments'", "E'p\\x7f'", "'{}'"),
            event("repeat('t', 256)", "'payments'", "'p'", "'{}'"),
            event("''", "'payments'", "'p'", "'{}'"),
            event("'t1'", "'payments'", "'p'", "'[]'"));

    private static final String VALID_EVENT = event("'t1'", "'payments'", "'p1'", "'{}'");

    private static final List<String> REFUSED_UPDATES = List.of(
            "UPDATE idempotency_keys SET failure = '{\"code\": \"x\"}' WHERE idempotency_key = 'completed'",
            "UPDATE idempotency_keys SET failure = NULL WHERE idempotency_key = 'declined'",
            "UPDATE idempotency_keys SET status = 'done' WHERE idempotency_key = 'in progress'",
            "UPDATE idempotency_keys SET lease_expires_at = NULL WHERE idempotency_key = 'leased'",
            "UPDATE idempotency_keys SET idempotency_key = E'k\\t' WHERE idempotency_key = 'completed'",
            "UPDATE outbox_events SET topic = E'pay\\nments' WHERE partition_key = 'p1'");

    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("v6").poolSize(2).build();

    @Test
    void theUpgradeKeepsTheRowsTheTablesFilesAndTheirIndexes() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "5");
        schema.execute(VALID_ROWS);
        schema.execute(VALID_EVENT);
        List<String> rowsBefore = rows();
        List<String> filesBefore = files();
        assertEquals(13, filesBefore.size(), "the keys table and its three indexes, the outbox's three generations and their two each: "
                + filesBefore);

        // Up to V6, the migration under test: later ones add columns (V9), which the rows compared here would show.
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "6");

        assertEquals(rowsBefore, rows());
        assertEquals(filesBefore, files(), "no rewrite of a table, no rebuild of an index");
        assertEquals(List.of("idempotency_keys idempotency_keys_row_valid", "outbox_events outbox_events_message_id_set",
                "outbox_events outbox_events_row_valid"), strings("""
                SELECT conrelid::regclass || ' ' || conname FROM pg_constraint
                WHERE conrelid IN ('idempotency_keys'::regclass, 'outbox_events'::regclass) AND contype = 'c' ORDER BY 1"""));
    }

    @Test
    void afterTheUpgradeBothTablesRefuseEveryRowTheyRefusedBefore() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "5");
        List<String> refusedBefore = refused(REFUSED_INSERTS);
        assertEquals(REFUSED_INSERTS, refusedBefore, "V5 refuses each of them");
        schema.execute(VALID_ROWS);
        schema.execute(VALID_EVENT);
        assertEquals(REFUSED_UPDATES, refused(REFUSED_UPDATES), "V5 refuses each of them");

        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(REFUSED_INSERTS, refused(REFUSED_INSERTS));
        assertEquals(REFUSED_UPDATES, refused(REFUSED_UPDATES));
        schema.execute("DELETE FROM idempotency_keys");
        schema.execute(VALID_ROWS);
        schema.execute(VALID_EVENT);
        assertEquals(6, strings("SELECT idempotency_key FROM idempotency_keys").size(), "every valid row is still accepted");
        assertEquals(2, strings("SELECT id FROM outbox_events").size(), "every valid event is still accepted");
    }

    @Test
    void aFreshSchemaRefusesTheSameRows() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(REFUSED_INSERTS, refused(REFUSED_INSERTS));
        schema.execute(VALID_ROWS);
        schema.execute(VALID_EVENT);
        assertEquals(REFUSED_UPDATES, refused(REFUSED_UPDATES));
    }

    private static String row(String tenant, String key, String status, String failure, String leaseToken, String leaseExpiresAt) {
        return "INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, failure, lease_token, lease_expires_at, expires_at) "
                + "VALUES (" + String.join(", ", tenant, key, status, failure, leaseToken, leaseExpiresAt) + ", now())";
    }

    private static String event(String tenant, String topic, String partitionKey, String headers) {
        return "INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, headers) VALUES ("
                + String.join(", ", tenant, topic, partitionKey, "'{}'", headers) + ")";
    }

    private List<String> rows() throws SQLException {
        List<String> rows = new ArrayList<>(strings("SELECT k::text FROM idempotency_keys AS k ORDER BY idempotency_key"));
        rows.addAll(strings("SELECT e::text FROM outbox_events AS e ORDER BY id"));
        return rows;
    }

    /** The statements PostgreSQL refused with check_violation (23514); each runs in its own transaction. */
    private List<String> refused(List<String> statements) throws SQLException {
        List<String> refused = new ArrayList<>();
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            for (String sql : statements) {
                try {
                    s.execute(sql);
                } catch (SQLException e) {
                    assertEquals("23514", e.getSQLState(), sql + ": " + e.getMessage());
                    refused.add(sql);
                }
            }
        }
        return refused;
    }

    private List<String> files() throws SQLException {
        return strings("""
                SELECT relname || ' ' || pg_relation_filenode(oid) FROM pg_class
                WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'i')
                  AND (relname LIKE 'idempotency_keys%' OR relname LIKE 'outbox_events%') ORDER BY relname""");
    }

    private List<String> strings(String sql) throws SQLException {
        return FirstColumn.of(schema.dataSource(), sql);
    }
}

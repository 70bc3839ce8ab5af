package dev.idempotency.outbox;

import org.jdbi.v3.core.Jdbi;

/**
 * Checks, before a relay starts, that the outbox has what its promises rest on: the
 * {@code message_id} column of migration V3, the insert-only outbox of migration V4 ({@code txid}
 * column, {@code outbox_retries} table), the server token of migration V7, the trace context columns
 * of migration V9, and an id sequence with CACHE 1; and whether it has V10's statistics table, which is
 * optional. Every writer of one ordering key draws its id
 * under an advisory lock held to commit (the executor takes it, and since migration V8 the outbox's
 * trigger takes it for any INSERT), so ids follow commit order only while no session pre-allocates a
 * block of ids; with CACHE 20 one key's commits got ids 4, 24, 5, and the relay would have published
 * them out of order.
 */
final class OutboxSchemaCheck {
    private final Jdbi jdbi;
    private final String schema;
    private final String shape;

    OutboxSchemaCheck(Jdbi jdbi, String schema, RelaySql sql) {
        this.jdbi = jdbi;
        this.schema = schema;
        this.shape = sql.outboxTableShape;
    }

    /**
     * Throws {@link OutboxSchemaException} naming the fix when the table is older or its sequence caches ids;
     * returns whether the schema has V10's outbox_relay_stats, which the relay records into only when it does.
     */
    boolean verify() {
        Shape found = jdbi.withHandle(h -> h.createQuery(shape)
                .map((rs, ctx) -> new Shape(rs.getBoolean("table_exists"), rs.getBoolean("has_message_id"),
                        rs.getBoolean("has_txid"), rs.getBoolean("has_retries"), rs.getBoolean("has_server_token"),
                        rs.getBoolean("has_trace_context"), rs.getBoolean("has_relay_stats"),
                        rs.getString("id_sequence"),
                        rs.getObject("id_cache", Long.class)))
                .one());
        String table = "\"" + schema + "\".outbox_events";
        if (!found.tableExists() || !found.hasMessageId()) {
            throw new OutboxSchemaException("outbox relay not started: " + table
                    + (found.tableExists() ? " has no message_id column" : " does not exist")
                    + "; apply the library's migrations to schema '" + schema
                    + "' (IdempotencyMigrations.migrate(dataSource, \"" + schema + "\"), or the relay's run --migrate)");
        }
        if (!found.hasTxid() || !found.hasRetries()) {
            throw new OutboxSchemaException("outbox relay not started: " + table + " predates migration V4 (the"
                    + " insert-only outbox: " + (found.hasTxid() ? "no outbox_retries table" : "no txid column")
                    + "), which this relay reads; stop every relay of the old version, apply the library's migrations"
                    + " to schema '" + schema + "' (IdempotencyMigrations.migrate(dataSource, \"" + schema
                    + "\"), or the relay's run --migrate), then start relays of this version");
        }
        if (!found.hasServerToken()) {
            throw new OutboxSchemaException("outbox relay not started: schema '" + schema + "' predates migration V7"
                    + " (relay positions bound to their server), which this relay's reads and writes check; apply the"
                    + " library's migrations to it (IdempotencyMigrations.migrate(dataSource, \"" + schema
                    + "\"), or the relay's run --migrate), then start relays of this version");
        }
        if (!found.hasTraceContext()) {
            throw new OutboxSchemaException("outbox relay not started: schema '" + schema + "' predates migration V9"
                    + " (trace context stored with events), whose columns this relay reads and copies to retries; apply"
                    + " the library's migrations to it (IdempotencyMigrations.migrate(dataSource, \"" + schema
                    + "\"), or the relay's run --migrate), then start relays of this version");
        }
        if (found.idSequence() == null || found.idCache() == null) {
            throw new OutboxSchemaException("outbox relay not started: " + table + ".id draws from no sequence;"
                    + " the table was not made by the library's migrations; recreate it with them");
        }
        if (found.idCache() != 1) {
            throw new OutboxSchemaException("outbox relay not started: the id sequence " + found.idSequence() + " of "
                    + table + " has CACHE " + found.idCache() + ", so ids of one ordering key need not follow commit"
                    + " order and events would be published out of order; fix: ALTER SEQUENCE " + found.idSequence()
                    + " CACHE 1");
        }
        return found.hasRelayStats();
    }

    private record Shape(boolean tableExists, boolean hasMessageId, boolean hasTxid, boolean hasRetries,
                         boolean hasServerToken, boolean hasTraceContext, boolean hasRelayStats, String idSequence, Long idCache) {
    }
}

package dev.idempotency.benchmarks;

/**
 * Every SQL statement the Java side of the benchmark sends itself (the executor sends its own; the
 * pgbench scripts are resources under {@code pgbench/}). Templates name the schema as {@code <schema>}.
 */
final class BenchmarkSql {
    /** The business write of every section: one payment row. */
    static final String INSERT_PAYMENT = """
            INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :amount)""";

    /** The Redis alternative's outbox event: a plain insert, as an application without the library writes it. */
    static final String INSERT_OUTBOX_EVENT = """
            INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload)
            VALUES (:tenant, :topic, :partitionKey, CAST(:payload AS jsonb))""";

    /** Empties the tables before each cell, so every cell starts from the same table sizes. */
    static final String TRUNCATE_TABLES = """
            TRUNCATE <schema>.payments, <schema>.idempotency_keys, <schema>.outbox_events""";

    /** Flushes dirty pages before a cell, so no cell pays for an earlier cell's checkpoint. */
    static final String CHECKPOINT = "CHECKPOINT";

    /** Creates the run's own schema. */
    static final String CREATE_SCHEMA = "CREATE SCHEMA <schema>";

    /** Drops the run's schema and everything in it. */
    static final String DROP_SCHEMA = "DROP SCHEMA IF EXISTS <schema> CASCADE";

    /** The server's version, durability settings and size, for the table's header. */
    static final String SERVER_FACTS = """
            SELECT current_setting('server_version') AS version,
                   current_setting('fsync') AS fsync,
                   current_setting('synchronous_commit') AS synchronous_commit,
                   current_setting('shared_buffers') AS shared_buffers,
                   current_setting('max_connections') AS max_connections""";

    /** Client connections the server can still accept, not counting the superuser reserve. */
    static final String FREE_CONNECTIONS = """
            SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
                   - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')""";

    private BenchmarkSql() {
    }

    /** Puts the double-quoted schema name into a template. */
    static String render(String template, String schema) {
        return template.replace("<schema>", '"' + schema + '"');
    }
}

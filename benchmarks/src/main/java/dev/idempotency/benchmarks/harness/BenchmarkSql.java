package dev.idempotency.benchmarks.harness;

/**
 * Every SQL statement the Java side of the benchmark sends itself (the executor sends its own; the
 * pgbench scripts are resources under {@code pgbench/}). Templates name the schema as {@code <schema>}.
 */
public final class BenchmarkSql {
    /** The business write of every section: one payment row. */
    public static final String INSERT_PAYMENT = """
            INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :amount)""";

    /** {@link #INSERT_PAYMENT} with JDBC's {@code ?} parameters (tenant, amount), for a callback on plain JDBC. */
    public static final String INSERT_PAYMENT_POSITIONAL = """
            INSERT INTO <schema>.payments (tenant_id, amount) VALUES (?, ?)""";

    /** The Redis alternative's outbox event: a plain insert, as an application without the library writes it. */
    public static final String INSERT_OUTBOX_EVENT = """
            INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload)
            VALUES (:tenant, :topic, :partitionKey, CAST(:payload AS jsonb))""";

    /**
     * Empties the tables before each cell, so every cell starts from the same table sizes: the outbox's
     * generation tables and retries, and the relay's positions and leases with them (a position names
     * transactions of events that are gone).
     */
    public static final String TRUNCATE_TABLES = """
            TRUNCATE <schema>.payments, <schema>.idempotency_keys, <schema>.outbox_events, <schema>.outbox_retries,
                     <schema>.outbox_relay_partitions, <schema>.outbox_relay_instances""";

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

    // ---- section 8, the sweeper ---------------------------------------------------------------

    /**
     * :rows events in the generation table writers use next (the one a rotation truncates), and
     * :liveRows in the current one, which must stay. The generation is named, as a writer that read
     * outbox_generation just before a rotation would; txid and the rest fill themselves.
     */
    public static final String FILL_GENERATIONS = """
            INSERT INTO <schema>.outbox_events (generation, tenant_id, topic, partition_key, payload)
            SELECT CASE WHEN g <= :rows THEN ((gen.current_generation + 1) % 3)::smallint ELSE gen.current_generation END,
                   't1', 'payments', (g % 10000)::text, jsonb_build_object('seq', g)
            FROM generate_series(1, :rows + :liveRows) AS g, <schema>.outbox_generation AS gen""";

    /**
     * :partitions relay positions that have consumed every event committed so far (what relays that
     * caught up leave), so that a rotation may truncate; no lease is held.
     */
    public static final String CONSUME_EVERYTHING = """
            INSERT INTO <schema>.outbox_relay_partitions (partition_no, consumed_snapshot)
            SELECT p, pg_current_snapshot() FROM generate_series(0, :partitions - 1) AS p""";

    /** The next sweep rotates whatever its retention: the last rotation dates from a day ago. */
    public static final String ROTATION_DUE = """
            UPDATE <schema>.outbox_generation SET rotated_at = now() - interval '1 day'""";

    /** The generation writers use, and the events left in the outbox. */
    public static final String GENERATION_STATE = """
            SELECT g.current_generation AS generation, (SELECT count(*) FROM <schema>.outbox_events) AS events
            FROM <schema>.outbox_generation g""";

    /** :rows completed keys that expired an hour ago, and :liveRows that expire in an hour, which the sweeper must keep. */
    public static final String FILL_EXPIRED_KEYS = """
            INSERT INTO <schema>.idempotency_keys (tenant_id, idempotency_key, status, result, expires_at)
            SELECT 't1', 'key-' || g, 'completed', jsonb_build_object('paymentId', g),
                   CASE WHEN g <= :rows THEN now() - interval '1 hour' + g * interval '1 microsecond'
                        ELSE now() + interval '1 hour' END
            FROM generate_series(1, :rows + :liveRows) AS g""";

    /** Fresh statistics and visibility map after a fill, as the sweeper meets a table in steady state. */
    public static final String VACUUM_SWEPT_TABLES = "VACUUM (ANALYZE) <schema>.outbox_events, <schema>.idempotency_keys";

    /** Payments after a consumers cell, to prove each message made one. */
    public static final String COUNT_PAYMENTS = "SELECT count(*) FROM <schema>.payments";

    /** Keys left after a sweep cell, to prove it purged the old and kept the live. */
    public static final String COUNT_KEYS = "SELECT count(*) FROM <schema>.idempotency_keys";

    private BenchmarkSql() {
    }

    /** Puts the double-quoted schema name into a template. */
    public static String render(String template, String schema) {
        return template.replace("<schema>", '"' + schema + '"');
    }
}

package dev.idempotency.benchmarks;

/**
 * Every SQL statement the relay sections (5 to 7) send themselves; the relay and the peer library
 * send their own. Templates name the schema as {@code <schema>}, rendered by {@link BenchmarkSql#render}.
 */
final class RelayBenchSql {
    /** A backlog of :events pending events in one statement, spread round-robin over :keys partition keys. */
    static final String FILL_OUTBOX = """
            INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers)
            SELECT 't1', 'payments', (g % :keys)::text, jsonb_build_object('seq', g), '{}'::jsonb
            FROM generate_series(1, :events) AS g""";

    /** Fresh statistics and visibility map after a fill, so the relay's claim plans as it would in steady state. */
    static final String VACUUM_OUTBOX = "VACUUM (ANALYZE) <schema>.outbox_events";

    /** The relay's lease and heartbeat rows, emptied so that a cell starts with no partition held. */
    static final String TRUNCATE_RELAY_TABLES = """
            TRUNCATE <schema>.outbox_relay_partitions, <schema>.outbox_relay_instances""";

    /** The peer library's own schema, beside the run's. */
    static final String CREATE_SCHEMA = "CREATE SCHEMA <schema>";

    /** Drops the peer library's schema. */
    static final String DROP_SCHEMA = "DROP SCHEMA IF EXISTS <schema> CASCADE";

    /** Entries the peer library has not yet processed (it deletes an entry in the transaction that ran it). */
    static final String COUNT_PEER_ENTRIES = "SELECT count(*) FROM <schema>.txno_outbox WHERE processed = false";

    private RelayBenchSql() {
    }
}

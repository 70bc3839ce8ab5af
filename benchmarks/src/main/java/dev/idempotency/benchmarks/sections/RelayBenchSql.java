package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkSql;

/**
 * Every SQL statement the relay sections (5 to 7) send themselves; the relay and the peer library
 * send their own. Templates name the schema as {@code <schema>}, rendered by {@link BenchmarkSql#render}.
 */
final class RelayBenchSql {
    /**
     * Before a fill on the V8 outbox, in the fill's transaction: one transaction writing events of
     * thousands of keys locks the whole outbox instead of each key (a lock table entry per key would
     * fill PostgreSQL's shared lock table).
     */
    static final String LOCK_FOR_BULK_WRITE = "SELECT <schema>.outbox_lock_for_bulk_write()";

    /** The topic {@link #FILL_OUTBOX} gives every event: section 14 binds its RabbitMQ queue by it. */
    static final String FILL_TOPIC = "payments";

    /**
     * A backlog of :events pending events in one statement, spread round-robin over :keys partition keys.
     * The generation and txid defaults fill themselves (one transaction, so one txid for the whole backlog).
     */
    static final String FILL_OUTBOX = """
            INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers)
            SELECT 't1', 'payments', (g % :keys)::text, jsonb_build_object('seq', g), '{}'::jsonb
            FROM generate_series(1, :events) AS g""";

    /**
     * {@link #FILL_OUTBOX} with a W3C trace context per event, as a writer with tracing on stores it (section 13):
     * trace id and parent span id drawn from the sequence number, sampled.
     */
    static final String FILL_OUTBOX_TRACED = """
            INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers, traceparent)
            SELECT 't1', 'payments', (g % :keys)::text, jsonb_build_object('seq', g), '{}'::jsonb,
                   '00-' || md5(g::text) || '-' || substr(md5('span' || g), 1, 16) || '-01'
            FROM generate_series(1, :events) AS g""";

    /**
     * The events of a fill as a relay reads them (message id, tenant, topic, key, payload text), in id order:
     * what section 14's broker clients publish on their own.
     */
    static final String EVENTS_AS_WRITTEN = """
            SELECT id, message_id::text AS message_id, tenant_id, topic, partition_key, payload::text AS payload
            FROM <schema>.outbox_events ORDER BY id""";

    /**
     * Fresh statistics and visibility map after a fill, so the relay's reads plan as they would in steady
     * state; on the V4 outbox, VACUUM of the partitioned table processes its generation tables.
     */
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

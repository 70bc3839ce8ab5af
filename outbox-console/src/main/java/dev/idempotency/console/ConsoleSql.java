package dev.idempotency.console;

import dev.idempotency.core.internal.SchemaNames;

/**
 * Every SQL statement of the operator console that the library's own classes ({@code OutboxBacklog},
 * {@code OutboxDeadLetters}) do not already run, in one place. Templates name the schema
 * {@code <schema>}, rendered once for a validated, double-quoted name; {@code :name} are Jdbi bind
 * parameters. Each is one autocommit read: it takes no row lock, so a relay's lease renewal or
 * publishing never waits for the console, nor the console for them. Each comment says what it locks.
 */
final class ConsoleSql {
    /**
     * The relays that heartbeat, with the partitions each holds under a live lease and when the
     * earliest and latest of those leases end (database clock).
     * Locks: none (plain reads of outbox_relay_instances and outbox_relay_partitions).
     */
    private static final String RELAYS = """
            SELECT i.instance_id, i.started_at, i.heartbeat_at, i.expires_at > now() AS alive,
                   coalesce(array_agg(p.partition_no ORDER BY p.partition_no) FILTER (WHERE p.partition_no IS NOT NULL),
                            '{}') AS partitions,
                   min(p.lease_expires_at) AS first_lease_end, max(p.lease_expires_at) AS last_lease_end
            FROM <schema>.outbox_relay_instances i
            LEFT JOIN <schema>.outbox_relay_partitions p
                   ON p.owner_id = i.instance_id AND p.lease_expires_at > now()
            GROUP BY i.instance_id, i.started_at, i.heartbeat_at, i.expires_at
            ORDER BY i.instance_id""";

    /**
     * How many partitions exist and how many no relay holds under a live lease.
     * Locks: none.
     */
    private static final String PARTITIONS = """
            SELECT count(*) AS total,
                   count(*) FILTER (WHERE owner_id IS NULL OR lease_expires_at <= now()) AS unheld
            FROM <schema>.outbox_relay_partitions""";

    /**
     * One dead letter without its payload: ids, key, headers, attempts, last error.
     * Locks: none.
     */
    private static final String DEAD_LETTER = """
            SELECT event_id AS id, coalesce(message_id::text, event_id::text) AS message_id, tenant_id, topic,
                   partition_key, headers::text AS headers, attempts, last_error, created_at, moved_at
            FROM <schema>.outbox_retries
            WHERE event_id = :id AND status = 'dead'""";

    /**
     * One dead letter's payload, for the explicit reveal only.
     * Locks: none.
     */
    private static final String DEAD_LETTER_PAYLOAD = """
            SELECT jsonb_pretty(payload) FROM <schema>.outbox_retries WHERE event_id = :id AND status = 'dead'""";

    /**
     * The generation tables' sizes and row counts as the catalog estimates them (as of the last VACUUM
     * or ANALYZE; reltuples is -1 before the first), and which one writers insert into. Catalog
     * estimates, not pg_total_relation_size: that opens each table in ACCESS SHARE mode and would queue
     * behind the sweeper's TRUNCATE of a generation.
     * Locks: none (pg_class and the one-row outbox_generation, plain reads).
     */
    private static final String GENERATIONS = """
            SELECT c.relname AS table_name,
                   c.relpages::bigint * current_setting('block_size')::bigint AS bytes,
                   c.reltuples::bigint AS estimated_rows,
                   right(c.relname, 1)::int = (SELECT current_generation FROM <schema>.outbox_generation) AS current
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = :schema AND c.relname IN ('outbox_events_0', 'outbox_events_1', 'outbox_events_2')
            ORDER BY c.relname""";

    /**
     * Events written in each of the last 15 minutes (by created_at, the writing transaction's clock) and
     * how many of those the relays have published by now. Since V4 the outbox records no publish time,
     * so this is the publish rate by the minute the events were written, not by the minute they went out.
     * Reads the last 15 minutes' rows through outbox_event_states; created_at has no index, so each
     * generation table is scanned: the page asks for it separately, after it has shown.
     * Locks: none.
     */
    private static final String RATES = """
            WITH recent AS (
                SELECT date_trunc('minute', created_at) AS minute, status
                FROM <schema>.outbox_event_states
                WHERE created_at >= date_trunc('minute', now()) - interval '14 minutes')
            SELECT extract(epoch FROM m.minute)::bigint AS minute, count(r.minute) AS written,
                   count(r.minute) FILTER (WHERE r.status = 'published') AS published
            FROM generate_series(date_trunc('minute', now()) - interval '14 minutes', date_trunc('minute', now()),
                                 interval '1 minute') AS m(minute)
            LEFT JOIN recent r ON r.minute = m.minute
            GROUP BY m.minute
            ORDER BY m.minute""";

    /**
     * Events waiting for another attempt after a failed one, and the error of the latest to fail: with
     * the stall signal, what tells a broker outage from a quiet outbox.
     * Locks: none.
     */
    private static final String RETRYING = """
            SELECT count(*) AS retrying,
                   (SELECT last_error FROM <schema>.outbox_retries
                    WHERE status = 'pending' AND attempts > 0 ORDER BY moved_at DESC, event_id DESC LIMIT 1) AS last_error
            FROM <schema>.outbox_retries
            WHERE status = 'pending' AND attempts > 0""";

    final String relays;
    final String partitions;
    final String deadLetter;
    final String deadLetterPayload;
    final String generations;
    final String rates;
    final String retrying;

    /** Renders every statement for {@code schema}, validated as the executor's configuration does. */
    ConsoleSql(String schema) {
        String quoted = '"' + SchemaNames.require(schema) + '"';
        this.relays = RELAYS.replace("<schema>", quoted);
        this.partitions = PARTITIONS.replace("<schema>", quoted);
        this.deadLetter = DEAD_LETTER.replace("<schema>", quoted);
        this.deadLetterPayload = DEAD_LETTER_PAYLOAD.replace("<schema>", quoted);
        this.generations = GENERATIONS.replace("<schema>", quoted);
        this.rates = RATES.replace("<schema>", quoted);
        this.retrying = RETRYING.replace("<schema>", quoted);
    }
}

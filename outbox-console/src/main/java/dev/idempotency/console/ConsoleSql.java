package dev.idempotency.console;

import dev.idempotency.core.internal.SchemaNames;

/**
 * Every SQL statement of the operator console that the library's own classes ({@code OutboxBacklog},
 * {@code OutboxDeadLetters}, {@code UnknownOutcomes}) do not already run, in one place. Templates name the schema
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
     * Which dead letters a list's filter keeps: each condition applies only when its parameter is set
     * (exact topic and tenant, the error text case-insensitively anywhere in the last error, written
     * at least :olderThanSeconds ago). The error text is matched with strpos, not LIKE, so an
     * operator's % or _ is taken literally.
     */
    private static final String DEAD_FILTER = """
            WHERE status = 'dead'
              AND (CAST(:topic AS text) IS NULL OR topic = CAST(:topic AS text))
              AND (CAST(:tenant AS text) IS NULL OR tenant_id = CAST(:tenant AS text))
              AND (CAST(:error AS text) IS NULL
                   OR strpos(lower(coalesce(last_error, '')), lower(CAST(:error AS text))) > 0)
              AND (CAST(:olderThanSeconds AS double precision) IS NULL
                   OR created_at <= now() - make_interval(secs => CAST(:olderThanSeconds AS double precision)))""";

    /**
     * The dead letters a filter keeps, oldest first, without payloads; the columns of
     * OutboxDeadLetters' own list.
     * Locks: none (a plain read; the dead-letter index serves status = 'dead').
     */
    private static final String DEAD_LETTERS_MATCHING = """
            SELECT event_id AS id, coalesce(message_id::text, event_id::text) AS message_id, tenant_id, topic,
                   partition_key, attempts, last_error, created_at
            FROM <schema>.outbox_retries
            <dead_filter>
            ORDER BY event_id
            LIMIT :limit""";

    /**
     * How many dead letters a filter keeps.
     * Locks: none.
     */
    private static final String COUNT_DEAD_LETTERS_MATCHING = """
            SELECT count(*) FROM <schema>.outbox_retries
            <dead_filter>""";

    /**
     * The keys held back behind a retry: for each (tenant, topic, partition key) with pending rows in
     * outbox_retries, its first one (the relay retries a key's events in id order, so this one's
     * next_attempt_at is when the key moves again), its attempts and last error, and how many of the
     * key's events wait in all. Keys due soonest first.
     * Locks: none (a plain read of the pending rows; relays write them only under their partition lease).
     */
    private static final String HELD_BACK_KEYS = """
            SELECT event_id, tenant_id, topic, partition_key, attempts, next_attempt_at, last_error, waiting
            FROM (SELECT event_id, tenant_id, topic, partition_key, attempts, next_attempt_at, last_error,
                         count(*) OVER key_events AS waiting,
                         row_number() OVER (key_events ORDER BY event_id) AS place
                  FROM <schema>.outbox_retries
                  WHERE status = 'pending'
                  WINDOW key_events AS (PARTITION BY tenant_id, topic, partition_key)) pending
            WHERE place = 1
            ORDER BY next_attempt_at, event_id
            LIMIT :limit""";

    /**
     * How many keys are held back behind a retry, and how many events wait in outbox_retries for them.
     * Locks: none.
     */
    private static final String COUNT_HELD_BACK = """
            SELECT count(DISTINCT (tenant_id, topic, partition_key)) AS keys, count(*) AS events
            FROM <schema>.outbox_retries
            WHERE status = 'pending'""";

    /**
     * One idempotency key as the executor left it (idempotency-jdbc's idempotency_keys), without what
     * it stores: its status, failure code, when it was claimed, last changed and expires, and its
     * lease. lease_ran_out: a lease whose holder died or overran, not yet failed by the sweeper.
     * Locks: none (a plain read by primary key; a claim or completion never waits for it).
     */
    private static final String KEY = """
            SELECT status, failure ->> 'code' AS failure_code, result_type, result IS NOT NULL AS has_result,
                   created_at, updated_at, expires_at, lease_expires_at, expires_at <= now() AS expired,
                   status = 'processing' AND lease_expires_at <= now() AS lease_ran_out
            FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key""";

    /**
     * What a key stores (its result and failure, as JSON), for the explicit reveal only.
     * Locks: none.
     */
    private static final String KEY_STORED = """
            SELECT jsonb_pretty(result) AS result, jsonb_pretty(failure) AS failure
            FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key""";

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
    final String deadLettersMatching;
    final String countDeadLettersMatching;
    final String heldBackKeys;
    final String countHeldBack;
    final String key;
    final String keyStored;

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
        this.deadLettersMatching = DEAD_LETTERS_MATCHING.replace("<dead_filter>", DEAD_FILTER).replace("<schema>", quoted);
        this.countDeadLettersMatching = COUNT_DEAD_LETTERS_MATCHING.replace("<dead_filter>", DEAD_FILTER)
                .replace("<schema>", quoted);
        this.heldBackKeys = HELD_BACK_KEYS.replace("<schema>", quoted);
        this.countHeldBack = COUNT_HELD_BACK.replace("<schema>", quoted);
        this.key = KEY.replace("<schema>", quoted);
        this.keyStored = KEY_STORED.replace("<schema>", quoted);
    }
}

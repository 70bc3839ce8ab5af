package dev.idempotency.outbox;

/**
 * Every SQL statement of the relay, in one place. The templates name the schema {@code <schema>}; an
 * instance holds them rendered once for a validated, double-quoted schema name, so no identifier is
 * concatenated from unchecked input and no statement is rebuilt per call. {@code :name} are Jdbi
 * bind parameters. Each statement's comment says what it locks and why. Apart from the start-up's
 * partition check, each is a single autocommit statement: no transaction spans a broker call, and
 * every lease decision is atomic.
 */
final class RelaySql {
    // ---- partition leases -------------------------------------------------------------------

    /**
     * Serializes relay start-ups' look at the partition table. Locks: the partition table in SHARE ROW
     * EXCLUSIVE mode until the start-up transaction ends, so two first relays cannot both create the
     * rows; running relays' lease updates wait those few milliseconds.
     */
    private static final String LOCK_PARTITIONS = """
            LOCK TABLE <schema>.outbox_relay_partitions IN SHARE ROW EXCLUSIVE MODE""";

    /**
     * Creates partitions 0 .. :partitions - 1 when the table is empty (the first relay on the database).
     * Locks: nothing beyond {@link #LOCK_PARTITIONS}, which the same transaction holds.
     */
    private static final String CREATE_PARTITIONS = """
            INSERT INTO <schema>.outbox_relay_partitions (partition_no)
            SELECT generate_series(0, :partitions - 1)
            WHERE NOT EXISTS (SELECT 1 FROM <schema>.outbox_relay_partitions)""";

    /**
     * How many partition rows exist, to refuse a relay configured with another count.
     * Locks: none (a plain read, under {@link #LOCK_PARTITIONS}).
     */
    private static final String COUNT_PARTITIONS = """
            SELECT count(*) FROM <schema>.outbox_relay_partitions""";

    /**
     * Records this instance's heartbeat, deletes dead instances' rows, and counts live instances (itself
     * included).
     * Locks: this instance's own row, and dead instances' rows with SKIP LOCKED so two relays reaping
     * the same dead row never wait for each other.
     */
    private static final String HEARTBEAT = """
            WITH beat AS (
                INSERT INTO <schema>.outbox_relay_instances (instance_id, heartbeat_at, expires_at)
                VALUES (:instance, now(), now() + :leaseMillis * interval '1 millisecond')
                ON CONFLICT (instance_id) DO UPDATE
                    SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
            ), dead AS (
                DELETE FROM <schema>.outbox_relay_instances
                WHERE instance_id IN (SELECT instance_id FROM <schema>.outbox_relay_instances
                                      WHERE expires_at <= now() AND instance_id <> :instance
                                      FOR UPDATE SKIP LOCKED)
            )
            SELECT count(*) + 1 FROM <schema>.outbox_relay_instances
            WHERE expires_at > now() AND instance_id <> :instance""";

    /**
     * Removes this instance's heartbeat row at a graceful stop, so the others rebalance at once.
     * Locks: this instance's own row, which no other instance writes.
     */
    private static final String DEREGISTER = """
            DELETE FROM <schema>.outbox_relay_instances WHERE instance_id = :instance""";

    /**
     * Takes up to :wanted partitions that are free or whose lease has run out, incrementing each
     * one's epoch; rows another instance is taking at this moment are skipped, not waited for.
     * Locks: the rows it takes, with SKIP LOCKED, for this one autocommit statement: concurrent relays
     * take different partitions without waiting.
     */
    private static final String ACQUIRE = """
            WITH free AS (
                SELECT partition_no FROM <schema>.outbox_relay_partitions
                WHERE owner_id IS NULL OR lease_expires_at <= now()
                ORDER BY partition_no
                LIMIT :wanted
                FOR UPDATE SKIP LOCKED
            )
            UPDATE <schema>.outbox_relay_partitions p
            SET owner_id = :instance, epoch = p.epoch + 1,
                lease_expires_at = now() + :leaseMillis * interval '1 millisecond'
            FROM free
            WHERE p.partition_no = free.partition_no
            RETURNING p.partition_no, p.epoch""";

    /**
     * Extends the leases this instance still holds with the same epoch and that have not run out; returns them.
     * Locks: the held partition rows for this one statement; it waits only for a concurrent takeover of
     * an expired lease, after which the epoch check makes the renewal fail, as it must.
     */
    private static final String RENEW = """
            UPDATE <schema>.outbox_relay_partitions p
            SET lease_expires_at = now() + :leaseMillis * interval '1 millisecond'
            FROM unnest(:partitionNos, :epochs) AS held(partition_no, epoch)
            WHERE p.partition_no = held.partition_no AND p.epoch = held.epoch
              AND p.owner_id = :instance AND p.lease_expires_at > now()
            RETURNING p.partition_no, p.epoch""";

    /**
     * Gives up leases this instance holds with these epochs, so another instance may take them at once.
     * Locks: the held partition rows for this one statement, as {@link #RENEW} does.
     */
    private static final String RELEASE = """
            UPDATE <schema>.outbox_relay_partitions p
            SET owner_id = NULL, lease_expires_at = NULL
            FROM unnest(:partitionNos, :epochs) AS held(partition_no, epoch)
            WHERE p.partition_no = held.partition_no AND p.epoch = held.epoch AND p.owner_id = :instance
            RETURNING p.partition_no""";

    // ---- schema check at start ---------------------------------------------------------------

    /**
     * What the relay needs of the outbox table, read from the catalogs (no lock): whether it exists,
     * whether it has message_id (migration V3), its id sequence and that sequence's CACHE. The CASEs
     * keep pg_get_serial_sequence, which fails on a missing table, from running when it is missing.
     * Locks: none (catalog reads).
     */
    private static final String OUTBOX_TABLE_SHAPE = """
            SELECT to_regclass(t.name) IS NOT NULL AS table_exists,
                   EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                           WHERE a.attrelid = to_regclass(t.name) AND a.attname = 'message_id'
                             AND NOT a.attisdropped) AS has_message_id,
                   CASE WHEN to_regclass(t.name) IS NOT NULL
                        THEN pg_get_serial_sequence(t.name, 'id') END AS id_sequence,
                   CASE WHEN to_regclass(t.name) IS NOT NULL
                        THEN (SELECT s.seqcache FROM pg_catalog.pg_sequence s
                              WHERE s.seqrelid = pg_get_serial_sequence(t.name, 'id')::regclass) END AS id_cache
            FROM (VALUES ('<schema>.outbox_events')) AS t(name)""";

    // ---- events ----------------------------------------------------------------------------

    /**
     * Up to :limit distinct ordering hashes that have pending events, in hash order from :from on,
     * with their partitions. A loose index scan: one index probe per hash, however many events it
     * has, so a key with a long backlog costs no more to pass over than a key with one event.
     * Locks: none. Claiming is by partition lease, not by row lock, so no lock is held while a broker
     * call is outstanding.
     */
    private static final String PENDING_KEYS = """
            WITH RECURSIVE pending_keys(ordering_hash, visited) AS (
                (SELECT ordering_hash, 1 FROM <schema>.outbox_events
                 WHERE status = 'pending' AND ordering_hash >= :from
                 ORDER BY ordering_hash
                 LIMIT 1)
              UNION ALL
                SELECT later.ordering_hash, pending_keys.visited + 1
                FROM pending_keys CROSS JOIN LATERAL (
                    SELECT e.ordering_hash FROM <schema>.outbox_events e
                    WHERE e.status = 'pending' AND e.ordering_hash > pending_keys.ordering_hash
                    ORDER BY e.ordering_hash
                    LIMIT 1) later
                WHERE pending_keys.visited < :limit
            )
            SELECT ordering_hash, (ordering_hash & 2147483647) % :partitions AS partition_no
            FROM pending_keys
            ORDER BY ordering_hash""";

    /**
     * The batch: for each given ordering hash its first :maxPerKey pending events in id order, less
     * every event at or behind a not-yet-due event of its key; first events of every key before
     * second ones, at most :batchSize, returned in id order. age_millis is now() - created_at.
     * message_id is the event's UUID, or for a row written before migration V3 its id in decimal.
     * Locks: none, as for {@link #PENDING_KEYS}.
     */
    private static final String PENDING_EVENTS = """
            SELECT * FROM (
                SELECT * FROM (
                    SELECT e.id, coalesce(e.message_id::text, e.id::text) AS message_id,
                           e.tenant_id, e.topic, e.partition_key, e.payload::text AS payload,
                           e.headers::text AS headers, e.created_at, e.attempts,
                           (e.ordering_hash & 2147483647) % :partitions AS partition_no,
                           (extract(epoch FROM now() - e.created_at) * 1000)::bigint AS age_millis,
                           bool_and(e.next_attempt_at <= now())
                               OVER (PARTITION BY e.tenant_id, e.topic, e.partition_key ORDER BY e.id) AS due,
                           row_number() OVER (PARTITION BY e.ordering_hash ORDER BY e.id) AS place
                    FROM unnest(:hashes) AS k(ordering_hash)
                    CROSS JOIN LATERAL (
                        SELECT * FROM <schema>.outbox_events o
                        WHERE o.status = 'pending' AND o.ordering_hash = k.ordering_hash
                        ORDER BY o.id
                        LIMIT :maxPerKey) e
                ) fetched
                WHERE due
                ORDER BY place, id
                LIMIT :batchSize
            ) batch
            ORDER BY id""";

    /**
     * The fence of every write to claimed events: the claimed partitions this instance still holds
     * with the same epoch and an unexpired lease. Each fenced write starts with it, so a paused old
     * owner's write changes nothing.
     * Locks: none on the partition rows: a takeover needs the lease to have run out, which {@code
     * lease_expires_at > now()} excludes at this statement's snapshot.
     */
    private static final String HELD_PARTITIONS = """
            WITH held AS (
                SELECT p.partition_no FROM <schema>.outbox_relay_partitions p
                JOIN unnest(:partitionNos, :epochs) AS claimed(partition_no, epoch)
                  ON claimed.partition_no = p.partition_no AND claimed.epoch = p.epoch
                WHERE p.owner_id = :instance AND p.lease_expires_at > now()
            )
            """;

    /**
     * Marks events published, but only those in partitions this instance still holds with the
     * claimed epoch and an unexpired lease; returns the partitions that passed that check.
     * Locks: the given event rows for this one autocommit statement; only the partition's holder writes
     * them, so it waits at most for an operator's requeue.
     */
    private static final String MARK_PUBLISHED = HELD_PARTITIONS + """
            , marked AS (
                UPDATE <schema>.outbox_events e
                SET status = 'published', published_at = now()
                FROM held
                WHERE e.id = ANY(:ids) AND e.status = 'pending'
                  AND (e.ordering_hash & 2147483647) % :partitions = held.partition_no
            )
            SELECT partition_no FROM held""";

    /**
     * Records failed attempts (fenced like {@link #MARK_PUBLISHED}): attempts + 1, the next attempt
     * after the given delay, the last error. Returns the partitions that passed the fence.
     * Locks: the given event rows for this one statement, as {@link #MARK_PUBLISHED} does.
     */
    private static final String RECORD_FAILURES = HELD_PARTITIONS + """
            , marked AS (
                UPDATE <schema>.outbox_events e
                SET attempts = e.attempts + 1,
                    next_attempt_at = now() + failed.delay_millis * interval '1 millisecond',
                    last_error = failed.error
                FROM held, unnest(:ids, :delayMillis, :errors) AS failed(id, delay_millis, error)
                WHERE e.id = failed.id AND e.status = 'pending'
                  AND (e.ordering_hash & 2147483647) % :partitions = held.partition_no
            )
            SELECT partition_no FROM held""";

    /**
     * Dead-letters events (fenced like {@link #MARK_PUBLISHED}) with their error; attempts grows by
     * the given increment (0 for a row that could not be decoded). Returns the partitions that passed.
     * Locks: the given event rows for this one statement, as {@link #MARK_PUBLISHED} does.
     */
    private static final String DEAD_LETTER = HELD_PARTITIONS + """
            , marked AS (
                UPDATE <schema>.outbox_events e
                SET status = 'dead', attempts = e.attempts + dead.increment, last_error = dead.error
                FROM held, unnest(:ids, :increments, :errors) AS dead(id, increment, error)
                WHERE e.id = dead.id AND e.status = 'pending'
                  AND (e.ordering_hash & 2147483647) % :partitions = held.partition_no
            )
            SELECT partition_no FROM held""";

    // ---- operators -------------------------------------------------------------------------

    /**
     * Dead letters, oldest first.
     * Locks: none.
     */
    private static final String LIST_DEAD = """
            SELECT id, coalesce(message_id::text, id::text) AS message_id, tenant_id, topic, partition_key,
                   attempts, last_error, created_at
            FROM <schema>.outbox_events
            WHERE status = 'dead'
            ORDER BY id
            LIMIT :limit""";

    /**
     * Puts one dead letter back to pending with its attempts reset; its last error stays for reference.
     * Locks: that one row for this statement; relays never write dead rows, so nobody waits.
     */
    private static final String REQUEUE_ONE = """
            UPDATE <schema>.outbox_events
            SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE id = :id AND status = 'dead'""";

    /**
     * Puts up to :limit dead letters back to pending (called until it changes none, so locks stay short).
     * Locks: at most :limit dead rows per statement, so a large requeue never holds many locks for long;
     * relays never write dead rows.
     */
    private static final String REQUEUE_SOME = """
            UPDATE <schema>.outbox_events
            SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE id IN (SELECT id FROM <schema>.outbox_events WHERE status = 'dead' ORDER BY id LIMIT :limit)
              AND status = 'dead'""";

    /**
     * How many events wait to be published.
     * Locks: none.
     */
    private static final String COUNT_PENDING = """
            SELECT count(*) FROM <schema>.outbox_events WHERE status = 'pending'""";

    /**
     * Age of the oldest pending event in milliseconds (database clock), or no row when none is pending.
     * Locks: none.
     */
    private static final String OLDEST_PENDING_AGE = """
            SELECT (extract(epoch FROM now() - created_at) * 1000)::bigint
            FROM <schema>.outbox_events
            WHERE status = 'pending'
            ORDER BY id
            LIMIT 1""";

    /**
     * How many events are dead-lettered.
     * Locks: none.
     */
    private static final String COUNT_DEAD = """
            SELECT count(*) FROM <schema>.outbox_events WHERE status = 'dead'""";

    final String lockPartitions;
    final String createPartitions;
    final String countPartitions;
    final String heartbeat;
    final String deregister;
    final String acquire;
    final String renew;
    final String release;
    final String outboxTableShape;
    final String pendingKeys;
    final String pendingEvents;
    final String markPublished;
    final String recordFailures;
    final String deadLetter;
    final String listDead;
    final String requeueOne;
    final String requeueSome;
    final String countPending;
    final String oldestPendingAge;
    final String countDead;

    /** Renders every statement for {@code schema}, validated here like {@link OutboxRelayConfig#schema()}. */
    RelaySql(String schema) {
        String quoted = '"' + OutboxRelayConfig.requireValidSchema(schema) + '"';
        this.lockPartitions = LOCK_PARTITIONS.replace("<schema>", quoted);
        this.createPartitions = CREATE_PARTITIONS.replace("<schema>", quoted);
        this.countPartitions = COUNT_PARTITIONS.replace("<schema>", quoted);
        this.heartbeat = HEARTBEAT.replace("<schema>", quoted);
        this.deregister = DEREGISTER.replace("<schema>", quoted);
        this.acquire = ACQUIRE.replace("<schema>", quoted);
        this.renew = RENEW.replace("<schema>", quoted);
        this.release = RELEASE.replace("<schema>", quoted);
        this.outboxTableShape = OUTBOX_TABLE_SHAPE.replace("<schema>", quoted);
        this.pendingKeys = PENDING_KEYS.replace("<schema>", quoted);
        this.pendingEvents = PENDING_EVENTS.replace("<schema>", quoted);
        this.markPublished = MARK_PUBLISHED.replace("<schema>", quoted);
        this.recordFailures = RECORD_FAILURES.replace("<schema>", quoted);
        this.deadLetter = DEAD_LETTER.replace("<schema>", quoted);
        this.listDead = LIST_DEAD.replace("<schema>", quoted);
        this.requeueOne = REQUEUE_ONE.replace("<schema>", quoted);
        this.requeueSome = REQUEUE_SOME.replace("<schema>", quoted);
        this.countPending = COUNT_PENDING.replace("<schema>", quoted);
        this.oldestPendingAge = OLDEST_PENDING_AGE.replace("<schema>", quoted);
        this.countDead = COUNT_DEAD.replace("<schema>", quoted);
    }
}

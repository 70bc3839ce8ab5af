package dev.idempotency.outbox;

/**
 * Every SQL statement of the relay, in one place. The templates name the schema {@code <schema>} and
 * the partition of an event by placeholders ({@link #render}); an instance holds them rendered once for
 * a validated, double-quoted schema name, so no identifier is concatenated from unchecked input and no
 * statement is rebuilt per call. {@code :name} are Jdbi bind parameters. Each statement's comment says
 * what it locks and why. Apart from the start-up's partition check, each is a single autocommit
 * statement: no transaction spans a broker call, and every lease decision is atomic.
 */
final class RelaySql {
    // ---- the partition of an event --------------------------------------------------------

    /**
     * The virtual partition of an ordering hash {@code <ordering_hash>}: its low 31 bits modulo the
     * partition count {@code <partitions>}. The one definition in the relay ({@link #partitionOf}), which
     * the statements below name by placeholder ({@link #render}); idempotency-jdbc's ExecutorSql renders
     * the same for the sweeper, and migrations V2, V4 and V7 (applied, so never edited) wrote it out.
     */
    private static final String PARTITION_OF = "(<ordering_hash> & 2147483647) % <partitions>";

    /**
     * {@link #PARTITION_OF} of {@code orderingHash} (a column) over {@code partitions} (a count, a
     * parameter or an expression giving one).
     */
    static String partitionOf(String orderingHash, String partitions) {
        return PARTITION_OF.replace("<ordering_hash>", orderingHash).replace("<partitions>", partitions);
    }

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
     * What the relay needs of the outbox, read from the catalogs (no lock): whether the table exists,
     * whether it has message_id (migration V3) and txid (V4), whether outbox_retries exists (V4) and
     * outbox_relay_server (V7), whether both tables have the trace context column traceparent (V9), whether
     * outbox_relay_stats exists (V10, optional: without it the relay records no statistics), its id
     * sequence and that sequence's CACHE. The CASEs keep pg_get_serial_sequence, which fails on a
     * missing table, from running when it is missing.
     * Locks: none (catalog reads).
     */
    private static final String OUTBOX_TABLE_SHAPE = """
            SELECT to_regclass(t.name) IS NOT NULL AS table_exists,
                   EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                           WHERE a.attrelid = to_regclass(t.name) AND a.attname = 'message_id'
                             AND NOT a.attisdropped) AS has_message_id,
                   EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                           WHERE a.attrelid = to_regclass(t.name) AND a.attname = 'txid'
                             AND NOT a.attisdropped) AS has_txid,
                   to_regclass(t.retries) IS NOT NULL AS has_retries,
                   to_regclass(t.server) IS NOT NULL AS has_server_token,
                   (SELECT count(*) = 2 FROM pg_catalog.pg_attribute a
                    WHERE a.attrelid IN (to_regclass(t.name), to_regclass(t.retries)) AND a.attname = 'traceparent'
                      AND NOT a.attisdropped) AS has_trace_context,
                   to_regclass(t.stats) IS NOT NULL AS has_relay_stats,
                   CASE WHEN to_regclass(t.name) IS NOT NULL
                        THEN pg_get_serial_sequence(t.name, 'id') END AS id_sequence,
                   CASE WHEN to_regclass(t.name) IS NOT NULL
                        THEN (SELECT s.seqcache FROM pg_catalog.pg_sequence s
                              WHERE s.seqrelid = pg_get_serial_sequence(t.name, 'id')::regclass) END AS id_cache
            FROM (VALUES ('<schema>.outbox_events', '<schema>.outbox_retries', '<schema>.outbox_relay_server',
                          '<schema>.outbox_relay_stats'))
                AS t(name, retries, server, stats)""";

    // ---- the server the positions count in (V7) ---------------------------------------------

    /**
     * The gate of every read and write of positions: raises SQLSTATE {@value #SERVER_CHANGED} unless
     * :server is the token of the server's current run (V7's outbox_require_server), so nothing is read or
     * written with positions held from before a restart, crash, failover or restore. A scalar subquery that
     * depends on no row: PostgreSQL runs it once per statement, as an InitPlan that the one-time filters
     * of every generation table's scan share, before the statement reads anything (as a bare call it
     * ran once per generation table).
     */
    private static final String ON_THIS_SERVER = "(SELECT <schema>.outbox_require_server(CAST(:server AS uuid)))";

    /** The SQLSTATE of {@link #ON_THIS_SERVER}'s refusal. */
    static final String SERVER_CHANGED = "IH001";

    /**
     * Draws the token of this server's run when there is none or it is stale (another postmaster start, or
     * another server); keeps a current one, which another relay drew. Sent under {@link #LOCK_PARTITIONS},
     * so relays validating at once agree on one token.
     * Locks: the one row of the unlogged outbox_relay_server.
     */
    private static final String DRAW_SERVER_TOKEN = """
            INSERT INTO <schema>.outbox_relay_server AS s (singleton) VALUES (true)
            ON CONFLICT (singleton) DO UPDATE
                SET token = gen_random_uuid(), system_identifier = excluded.system_identifier,
                    postmaster_started_at = excluded.postmaster_started_at
                WHERE s.system_identifier <> excluded.system_identifier
                   OR s.postmaster_started_at <> excluded.postmaster_started_at""";

    /**
     * What decides whether the stored positions hold on this server, read under {@link #LOCK_PARTITIONS}:
     * the token; positions written on another server (their system identifier); positions of this server
     * whose snapshot runs ahead of its transaction counter (impossible on one history); events whose txid
     * is at or above the counter (committed "in the future": copied from another server, and invisible
     * here until the counter passes them); and the highest event id against its sequence (a logical
     * replica copies rows but not sequences). Locks: none beyond LOCK_PARTITIONS (reads).
     */
    private static final String SERVER_CHECK = """
            WITH here AS MATERIALIZED (
                SELECT <schema>.outbox_system_identifier() AS system_identifier,
                       pg_snapshot_xmax(pg_current_snapshot()) AS xmax
            )
            SELECT <schema>.outbox_server_token() AS token,
                   (SELECT system_identifier FROM here) AS system_identifier,
                   (SELECT xmax::text FROM here) AS xmax,
                   (SELECT count(*) FROM <schema>.outbox_relay_partitions p
                    WHERE p.system_identifier <> (SELECT system_identifier FROM here)) AS foreign_positions,
                   (SELECT min(p.system_identifier) FROM <schema>.outbox_relay_partitions p
                    WHERE p.system_identifier <> (SELECT system_identifier FROM here)) AS foreign_system_identifier,
                   (SELECT count(*) FROM <schema>.outbox_relay_partitions p
                    WHERE p.system_identifier = (SELECT system_identifier FROM here)
                      AND (pg_snapshot_xmax(p.consumed_snapshot) > (SELECT xmax FROM here)
                           OR pg_snapshot_xmax(p.batch_snapshot) > (SELECT xmax FROM here))) AS positions_ahead,
                   (SELECT count(*) FROM <schema>.outbox_events e
                    WHERE e.txid >= (SELECT xmax FROM here)) AS events_ahead,
                   (SELECT max(e.id) FROM <schema>.outbox_events e) AS max_id,
                   pg_sequence_last_value(pg_get_serial_sequence('<schema>.outbox_events', 'id')::regclass) AS sequence_last,
                   pg_get_serial_sequence('<schema>.outbox_events', 'id') AS sequence""";

    /**
     * Bounds the rebase's lock waits (its transaction's own setting, gone at commit): a LOCK request queued
     * behind a long writer makes every later writer queue behind it, so the rebase gives up after
     * :lockTimeout and is tried again at the next read instead. Names no table, so it is not rendered
     * (as {@link #INDEX_READS}). Locks: none.
     */
    static final String REBASE_LOCK_TIMEOUT = """
            SELECT set_config('lock_timeout', :lockTimeout, true)""";

    /**
     * Makes every event still in the outbox pending again, on this server's count, when the stored positions
     * do not hold here ({@link #SERVER_CHECK}): republishing is safe (consumers drop copies by message id),
     * skipping is not. First it waits for every writer in flight and holds new ones until commit, so no
     * event commits beside it; then events whose txid this server could still see as in progress or in
     * the future get this transaction's id (older ones are visible to every snapshot from now on); then
     * every partition starts from '1:1:' (nothing consumed) on this server. Per key, ids stay in their
     * order, and every later event has a higher id and commits after this.
     * Locks: SHARE on outbox_events (writers wait for the commit, readers go on), the partition rows.
     */
    private static final String REBASE_LOCK = """
            LOCK TABLE <schema>.outbox_events IN SHARE MODE""";

    /** {@link #REBASE_LOCK}'s second statement; returns how many events the outbox holds. */
    private static final String REBASE = """
            WITH restamped AS (
                UPDATE <schema>.outbox_events SET txid = pg_current_xact_id()
                WHERE txid >= (SELECT pg_snapshot_xmin(pg_current_snapshot()))
                RETURNING 1
            ), reset AS (
                UPDATE <schema>.outbox_relay_partitions
                SET consumed_snapshot = '1:1:', batch_snapshot = NULL, batch_cursor = NULL,
                    system_identifier = <schema>.outbox_system_identifier()
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM <schema>.outbox_events) AS events,
                   (SELECT count(*) FROM restamped) AS restamped,
                   (SELECT count(*) FROM reset) AS partitions""";

    // ---- the publish path: snapshot differences --------------------------------------------

    /** The columns every read of events returns, from outbox_events {@code e}; see {@code EventRow}. */
    private static final String EVENT_COLUMNS = """
            e.id, coalesce(e.message_id::text, e.id::text) AS message_id, e.tenant_id, e.topic, e.partition_key,
                   e.payload::text AS payload, e.headers::text AS headers, e.created_at, 0 AS attempts,
                   e.traceparent, e.tracestate,
                   <event_partition> AS partition_no,
                   (extract(epoch FROM now() - e.created_at) * 1000)::bigint AS age_millis,
                   EXISTS (SELECT 1 FROM <schema>.outbox_retries r
                           WHERE r.status = 'pending' AND r.ordering_hash = e.ordering_hash
                             AND r.tenant_id = e.tenant_id AND r.topic = e.topic
                             AND r.partition_key = e.partition_key) AS held_back""";

    /**
     * Sent before each page walk ({@link #DIFF_PAGE}) and each first read of a relay that is caught up
     * ({@link #DIFF_START}), in the same statement string: sequential scans are planned only where nothing
     * else can run. A generation starts empty after each rotation; a plan PostgreSQL cached after
     * autovacuum analyzed a few dozen of its rows scanned every generation whole, for the candidates and
     * again per row of the page, and stayed in use while the table grew until the next analyze (minutes,
     * millions of events). Those reads find few rows, which the indexes (txid, primary key, retries by key)
     * serve at any size. Behind a backlog the first read is planned at each call instead ({@code
     * OutboxPositions}): with most of a generation to read, a sequential scan is the faster plan.
     * set_config(..., true) rather than SET LOCAL: the two statements travel in one flush with one Sync,
     * so they share one implicit transaction, which SET LOCAL would warn about (and set all the same); the
     * setting ends with it. Its result, one row, is the first of the string's two.
     *
     * <p>JIT compilation goes off with it, for the same transaction: with sequential scans off, a table
     * the planner can only scan (the one-row outbox_relay_server that V7's outbox_require_server reads, the
     * gate of every read) costs 10^10, past jit_above_cost and the inline and optimize thresholds, so
     * PostgreSQL JIT-compiled that one-row lookup with LLVM at each execution: 25 to 45 ms of the relay's
     * backend CPU per read instead of about 1 ms, most of what the relay cost writers beside it (issue
     * 38). PL/pgSQL caches the function's plan with that decision, so the first read on a connection
     * decided it for every later statement there. Locks: none.
     */
    static final String INDEX_READS = "SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)";

    /**
     * The positions of the given partitions, as stored.
     * Locks: none (a plain read; only the partition's holder writes its position).
     */
    private static final String POSITIONS = """
            SELECT partition_no, consumed_snapshot::text AS consumed, batch_snapshot::text AS batch, batch_cursor
            FROM <schema>.outbox_relay_partitions
            WHERE partition_no = ANY(:partitionNos)""";

    /**
     * The first page of a new batch: hi is this statement's own snapshot (pg_current_snapshot() is the
     * statement's), so the rows it reads are exactly the events whose transaction is visible in hi; of
     * them it keeps, per partition, those not visible in that partition's consumed snapshot (:los, one
     * per partition, NULL for partitions not read), and returns the first :limit in id order with hi.
     * The candidates are found by the txid index: an event not visible in lo either has a txid in lo's
     * in-progress list or one at or above lo's xmax (below xmin is committed-and-visible or aborted).
     * The relay passes those bounds over all partitions read: :xip, the in-progress txids below :xmax,
     * the lowest xmax, so the two ranges are disjoint index scans joined by UNION ALL (written as one
     * OR, PostgreSQL 15 scanned every generation table). The candidates are materialized narrow before
     * the sort, and only the page's rows are fetched whole, each by its primary key. Caught up, sent after
     * {@link #INDEX_READS}, so the plan PostgreSQL caches for it is that one whatever the statistics say ({@link #diffStartByIndex}).
     * Locks: none; a plain read at the statement's snapshot.
     */
    private static final String DIFF_START = """
            WITH hi AS MATERIALIZED (
                SELECT pg_current_snapshot() AS snapshot
            ), candidates AS MATERIALIZED (
                SELECT c.id, c.generation, c.txid, c.ordering_hash FROM <schema>.outbox_events c
                WHERE c.txid = ANY(CAST(:xip AS xid8[]))
              UNION ALL
                SELECT c.id, c.generation, c.txid, c.ordering_hash FROM <schema>.outbox_events c
                WHERE c.txid >= CAST(:xmax AS xid8) AND c.txid < (SELECT pg_snapshot_xmax(snapshot) FROM hi)
            ), difference AS MATERIALIZED (
                SELECT c.id, c.generation FROM candidates c
                WHERE pg_visible_in_snapshot(c.txid, (SELECT snapshot FROM hi))
                  AND NOT pg_visible_in_snapshot(c.txid,
                          (SELECT CAST(:los AS pg_snapshot[]))[<candidate_partition> + 1])
            ), page AS (
                SELECT id, generation FROM difference ORDER BY id LIMIT :limit
            )
            SELECT """ + " " + EVENT_COLUMNS + """
            , (SELECT snapshot::text FROM hi) AS hi
            FROM page CROSS JOIN LATERAL (
                SELECT * FROM <schema>.outbox_events w WHERE w.id = page.id AND w.generation = page.generation) e
            WHERE <on_this_server>
            ORDER BY e.id""";

    /**
     * The next page of a batch under way: events visible in its snapshot :hi and not in their
     * partition's consumed snapshot (:los), past their partition's cursor (:cursors; NULL for
     * partitions not read), the first :limit in id order. It walks the primary key from the lowest cursor
     * (sent after {@link #INDEX_READS}, so also with statistics of a smaller generation: {@link #diffPageByIndex}).
     * Locks: none; a plain read.
     */
    private static final String DIFF_PAGE = """
            WITH pos AS MATERIALIZED (
                SELECT CAST(:los AS pg_snapshot[]) AS los, CAST(:cursors AS bigint[]) AS cursors,
                       CAST(:hi AS pg_snapshot) AS hi
            )
            SELECT """ + " " + EVENT_COLUMNS + """
            , (SELECT hi::text FROM pos) AS hi
            FROM <schema>.outbox_events e
            WHERE e.id > (SELECT min(c) FROM pos, unnest(pos.cursors) AS c)
              AND e.id > (SELECT cursors FROM pos)[<event_partition> + 1]
              AND pg_visible_in_snapshot(e.txid, (SELECT hi FROM pos))
              AND NOT pg_visible_in_snapshot(e.txid, (SELECT los FROM pos)[<event_partition> + 1])
              AND <on_this_server>
            ORDER BY e.id
            LIMIT :limit""";

    /**
     * The fence of every write for claimed events: the claimed partitions this instance still holds
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
     * Writes the positions of the partitions this instance still holds (fenced like every write): per
     * partition its consumed snapshot, and its batch snapshot and cursor (both NULL between batches).
     * Returns the partitions that passed the fence. The relay's only write after pages whose events all
     * went out.
     * Locks: the held partition rows (their position) for this one autocommit statement. Nothing in
     * outbox_events is written.
     */
    private static final String ADVANCE = """
            UPDATE <schema>.outbox_relay_partitions p
            SET consumed_snapshot = CAST(s.consumed AS pg_snapshot),
                batch_snapshot = CAST(s.batch AS pg_snapshot),
                batch_cursor = s.cursor
            FROM unnest(:partitionNos, :consumed, :batches, :cursors) AS s(partition_no, consumed, batch, cursor)
            JOIN held ON held.partition_no = s.partition_no
            WHERE p.partition_no = s.partition_no AND <on_this_server>""";

    /**
     * {@link #ADVANCE} alone, committed without waiting for its WAL to reach disk (synchronous_commit
     * off for this statement's own transaction only). A crash may then lose the last positions, never
     * an event: the relay publishes those pages again (duplicates, which consumers drop by message id).
     * Whatever later depends on a position (the sweeper's TRUNCATE of a consumed generation) commits
     * synchronously, and WAL is flushed in order, so it is never durable without the position it read.
     */
    private static final String SETTLE_PAGE = HELD_PARTITIONS + """
            , advanced AS (
            """ + ADVANCE + """
            )
            SELECT held.partition_no FROM held, (SELECT set_config('synchronous_commit', 'off', true)) AS without_flush""";

    /**
     * {@link #ADVANCE}, and in the same statement copies the page's failed, dead and held-back events
     * to outbox_retries (for held partitions only), so the copies and the position that passes them
     * commit together. A copy keeps its event's trace context (V9), so a retry or a requeued dead
     * letter still carries its writer's trace. Each event is looked up by its id ({@code LATERAL ...
     * LIMIT 1}): joined plainly, a plan cached while the generations were small (one just rotated)
     * hashes the page's ids and scans every generation, at every page with a failure, until
     * autovacuum next analyzes them.
     * Locks: as {@link #ADVANCE}; inserts the retry rows.
     */
    private static final String SETTLE_PAGE_WITH_RETRIES = HELD_PARTITIONS + """
            , moved AS (
                INSERT INTO <schema>.outbox_retries
                    (event_id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, headers, created_at,
                     traceparent, tracestate, status, attempts, next_attempt_at, last_error)
                SELECT e.id, e.message_id, e.tenant_id, e.topic, e.partition_key, e.ordering_hash, e.payload, e.headers,
                       e.created_at, e.traceparent, e.tracestate,
                       m.status, m.attempts, now() + m.delay_millis * interval '1 millisecond', m.error
                FROM unnest(:movedIds, :movedStatuses, :movedAttempts, :movedDelays, :movedErrors)
                         WITH ORDINALITY AS m(id, status, attempts, delay_millis, error, n)
                CROSS JOIN LATERAL (SELECT * FROM <schema>.outbox_events WHERE id = m.id LIMIT 1) AS e
                JOIN held ON held.partition_no = <event_partition>
                ORDER BY m.n
                ON CONFLICT (event_id) DO NOTHING
            ), advanced AS (
            """ + ADVANCE + """
            )
            SELECT partition_no FROM held""";

    // ---- the retry path ----------------------------------------------------------------------

    /**
     * Up to :limit distinct ordering hashes that have pending retries, in hash order from :from on,
     * with their partitions. A loose index scan of the pending-by-key index: one probe per hash,
     * however many retries its key has.
     * Locks: none. Claiming is by partition lease, not by row lock.
     */
    private static final String PENDING_RETRY_KEYS = """
            WITH RECURSIVE pending_keys(ordering_hash, visited) AS (
                (SELECT ordering_hash, 1 FROM <schema>.outbox_retries
                 WHERE status = 'pending' AND ordering_hash >= :from
                 ORDER BY ordering_hash
                 LIMIT 1)
              UNION ALL
                SELECT later.ordering_hash, pending_keys.visited + 1
                FROM pending_keys CROSS JOIN LATERAL (
                    SELECT r.ordering_hash FROM <schema>.outbox_retries r
                    WHERE r.status = 'pending' AND r.ordering_hash > pending_keys.ordering_hash
                    ORDER BY r.ordering_hash
                    LIMIT 1) later
                WHERE pending_keys.visited < :limit
            )
            SELECT ordering_hash, <key_partition> AS partition_no
            FROM pending_keys
            ORDER BY ordering_hash""";

    /**
     * The retries due now: for each given ordering hash its first :maxPerKey pending retries in event
     * id order, less every one at or behind a not-yet-due retry of its key (a key's followers wait for
     * its failed event); first events of every key before second ones, at most :batchSize, in id order.
     * Locks: none, as for {@link #PENDING_RETRY_KEYS}.
     */
    private static final String PENDING_RETRIES = """
            SELECT * FROM (
                SELECT * FROM (
                    SELECT r.event_id AS id, coalesce(r.message_id::text, r.event_id::text) AS message_id,
                           r.tenant_id, r.topic, r.partition_key, r.payload::text AS payload,
                           r.headers::text AS headers, r.created_at, r.attempts, r.traceparent, r.tracestate,
                           <retry_partition> AS partition_no,
                           (extract(epoch FROM now() - r.created_at) * 1000)::bigint AS age_millis,
                           false AS held_back,
                           bool_and(r.next_attempt_at <= now())
                               OVER (PARTITION BY r.tenant_id, r.topic, r.partition_key ORDER BY r.event_id) AS due,
                           row_number() OVER (PARTITION BY r.ordering_hash ORDER BY r.event_id) AS place
                    FROM unnest(:hashes) AS k(ordering_hash)
                    CROSS JOIN LATERAL (
                        SELECT * FROM <schema>.outbox_retries o
                        WHERE o.status = 'pending' AND o.ordering_hash = k.ordering_hash
                        ORDER BY o.event_id
                        LIMIT :maxPerKey) r
                ) fetched
                WHERE due
                ORDER BY place, id
                LIMIT :batchSize
            ) batch
            ORDER BY id""";

    /**
     * Records a retry round's outcomes, for partitions this instance still holds (fenced): published
     * retries are deleted; failed ones get attempts + 1, their next attempt after :delays and the
     * error; dead ones (rejected, out of attempts, undecodable) become dead letters. Returns the
     * partitions that passed the fence. The only writes of the relay that touch single events, and
     * only for events that failed once. Each retry row is found by its event id ({@code LATERAL ...
     * LIMIT 1}), then deleted or updated by its {@code ctid}, rechecked against that id: joined
     * plainly, a plan cached while outbox_retries was small (empty for weeks, then a webhook starts
     * failing) hashes the outcomes and scans the whole table, at every retry round, until autovacuum
     * next analyzes it.
     * Locks: the given retry rows for this one statement; only the partition's holder writes pending
     * retries, so it waits at most for an operator's delete.
     */
    private static final String SETTLE_RETRIES = HELD_PARTITIONS + """
            , outcome AS (
                SELECT o.*, found.row_id
                FROM unnest(:ids, :actions, :increments, :delays, :errors) AS o(id, action, increment, delay_millis, error)
                CROSS JOIN LATERAL (SELECT ctid AS row_id FROM <schema>.outbox_retries WHERE event_id = o.id LIMIT 1) AS found
            ), removed AS (
                DELETE FROM <schema>.outbox_retries r
                USING outcome o, held
                WHERE r.ctid = o.row_id AND r.event_id = o.id AND o.action = 'published' AND r.status = 'pending'
                  AND <retry_partition> = held.partition_no
            ), changed AS (
                UPDATE <schema>.outbox_retries r
                SET status = CASE WHEN o.action = 'dead' THEN 'dead' ELSE 'pending' END,
                    attempts = r.attempts + o.increment,
                    next_attempt_at = CASE WHEN o.action = 'failed'
                                           THEN now() + o.delay_millis * interval '1 millisecond'
                                           ELSE r.next_attempt_at END,
                    last_error = o.error
                FROM outcome o, held
                WHERE r.ctid = o.row_id AND r.event_id = o.id AND o.action <> 'published' AND r.status = 'pending'
                  AND <retry_partition> = held.partition_no
            )
            SELECT partition_no FROM held""";

    // ---- operators -------------------------------------------------------------------------

    /**
     * Dead letters, oldest first.
     * Locks: none.
     */
    private static final String LIST_DEAD = """
            SELECT event_id AS id, coalesce(message_id::text, event_id::text) AS message_id, tenant_id, topic,
                   partition_key, attempts, last_error, created_at
            FROM <schema>.outbox_retries
            WHERE status = 'dead'
            ORDER BY event_id
            LIMIT :limit""";

    /**
     * Puts one dead letter back to pending with its attempts reset, due now; its last error stays for
     * reference. Its key's newer events then wait behind it, as behind any retry.
     * Locks: that one row for this statement; relays never write dead rows, so nobody waits.
     */
    private static final String REQUEUE_ONE = """
            UPDATE <schema>.outbox_retries
            SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE event_id = :id AND status = 'dead'""";

    /**
     * Puts up to :limit dead letters back to pending (called until it changes none, so locks stay short).
     * Locks: at most :limit dead rows per statement; relays never write dead rows.
     */
    private static final String REQUEUE_SOME = """
            UPDATE <schema>.outbox_retries
            SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE event_id IN (SELECT event_id FROM <schema>.outbox_retries WHERE status = 'dead'
                               ORDER BY event_id LIMIT :limit)
              AND status = 'dead'""";

    /**
     * Deletes one dead letter for good: it is never published. Its event's row in outbox_events stays
     * until the sweeper truncates its generation, and outbox_event_states meanwhile shows it as
     * published, since its partition's position passed it when it was dead-lettered.
     * Locks: that one row for this statement; relays never write dead rows, so only an operator's
     * requeue or delete of the same row can make it wait, and it then deletes nothing.
     */
    private static final String DELETE_DEAD = """
            DELETE FROM <schema>.outbox_retries
            WHERE event_id = :id AND status = 'dead'""";

    /**
     * The outbox events no relay position has passed yet: with no partition rows (no relay ever ran)
     * every event; otherwise those its partition's position does not consume (V7's outbox_event_consumed,
     * on the positions this server trusts: one written on another server consumes nothing), found by
     * the txid index (in some consumed snapshot's in-progress list, or at or above the lowest consumed
     * xmax). Used by the backlog statements below.
     */
    private static final String UNCONSUMED = """
            WITH pos AS MATERIALIZED (
                SELECT partition_no, consumed_snapshot AS c, batch_snapshot AS b, batch_cursor AS k
                FROM <schema>.outbox_relay_positions
            ), bounds AS MATERIALIZED (
                SELECT count(*) AS partitions,
                       coalesce(min(pg_snapshot_xmax(c)), '0'::xid8) AS xmax,
                       ARRAY(SELECT DISTINCT x FROM pos, pg_snapshot_xip(pos.c) AS x) AS xip
                FROM pos
            ), unconsumed AS (
                SELECT e.created_at
                FROM (SELECT txid, id, ordering_hash, created_at FROM <schema>.outbox_events
                      WHERE txid = ANY(CAST((SELECT xip FROM bounds) AS xid8[])) AND txid < (SELECT xmax FROM bounds)
                    UNION ALL
                      SELECT txid, id, ordering_hash, created_at FROM <schema>.outbox_events
                      WHERE txid >= (SELECT xmax FROM bounds)) e
                LEFT JOIN pos ON pos.partition_no = <backlog_partition>
                WHERE NOT <schema>.outbox_event_consumed(e.txid, e.id, pos.c, pos.b, pos.k)
            )
            """;

    /**
     * How many events wait to be published: events no position has passed, plus pending retries.
     * Locks: none.
     */
    private static final String COUNT_PENDING = UNCONSUMED + """
            SELECT (SELECT count(*) FROM unconsumed)
                 + (SELECT count(*) FROM <schema>.outbox_retries WHERE status = 'pending')""";

    /**
     * Age of the oldest pending event (unconsumed or a pending retry) in milliseconds (database
     * clock), or NULL when none is pending.
     * Locks: none.
     */
    private static final String OLDEST_PENDING_AGE = UNCONSUMED + """
            SELECT (extract(epoch FROM now() - least(
                       (SELECT min(created_at) FROM unconsumed),
                       (SELECT min(created_at) FROM <schema>.outbox_retries WHERE status = 'pending'))) * 1000)::bigint""";

    /**
     * How many events are dead-lettered.
     * Locks: none.
     */
    private static final String COUNT_DEAD = """
            SELECT count(*) FROM <schema>.outbox_retries WHERE status = 'dead'""";

    // ---- publish statistics (V10) --------------------------------------------------------------

    /**
     * The latency histogram's bucket bounds in milliseconds, V10's one definition, read once at start.
     * Locks: none.
     */
    private static final String LATENCY_BOUNDS = """
            SELECT <schema>.outbox_relay_latency_bounds()""";

    /**
     * Adds what this relay published since its last flush, :countedMillis ago, to its row of the 10-second
     * bucket (database clock) that holds the middle of that time, so that counts land about when they
     * happened rather than up to a flush interval late: the count, the max latency, and the histogram
     * element by element. One statement per flush (about one per bucket), none when nothing was published;
     * a flush that lands in a bucket already written (the final one at stop) adds to it.
     * Locks: this instance's own row of the current bucket, which no other relay writes; the sweeper
     * deletes only buckets 24 hours old.
     */
    private static final String RECORD_STATS = """
            INSERT INTO <schema>.outbox_relay_stats AS s
                (bucket_start, instance_id, published, latency_max_ms, latency_buckets)
            VALUES (<schema>.outbox_relay_stats_bucket(now() - :countedMillis / 2 * interval '1 millisecond'),
                    :instance, :published, :maxMillis, :buckets)
            ON CONFLICT (bucket_start, instance_id) DO UPDATE
            SET published = s.published + excluded.published,
                latency_max_ms = greatest(s.latency_max_ms, excluded.latency_max_ms),
                latency_buckets = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                                        FROM unnest(s.latency_buckets, excluded.latency_buckets)
                                             WITH ORDINALITY AS u(a, b, i)
                                        ORDER BY i)""";

    final String lockPartitions;
    final String createPartitions;
    final String countPartitions;
    final String heartbeat;
    final String deregister;
    final String acquire;
    final String renew;
    final String release;
    final String outboxTableShape;
    final String drawServerToken;
    final String serverCheck;
    final String rebaseLock;
    final String rebase;
    final String positions;
    final String diffStart;
    /** {@link #INDEX_READS}, then {@link #DIFF_START}: one string, one round trip, the rows in its second result. */
    final String diffStartByIndex;
    /** {@link #INDEX_READS}, then {@link #DIFF_PAGE}, as {@link #diffStartByIndex}. */
    final String diffPageByIndex;
    final String settlePage;
    final String settlePageWithRetries;
    final String pendingRetryKeys;
    final String pendingRetries;
    final String settleRetries;
    final String listDead;
    final String requeueOne;
    final String requeueSome;
    final String deleteDead;
    final String countPending;
    final String oldestPendingAge;
    final String countDead;
    final String latencyBounds;
    final String recordStats;

    /** Renders every statement for {@code schema}, validated here like {@link OutboxRelayConfig#schema()}. */
    RelaySql(String schema) {
        String quoted = '"' + OutboxRelayConfig.requireValidSchema(schema) + '"';
        this.lockPartitions = render(LOCK_PARTITIONS, quoted);
        this.createPartitions = render(CREATE_PARTITIONS, quoted);
        this.countPartitions = render(COUNT_PARTITIONS, quoted);
        this.heartbeat = render(HEARTBEAT, quoted);
        this.deregister = render(DEREGISTER, quoted);
        this.acquire = render(ACQUIRE, quoted);
        this.renew = render(RENEW, quoted);
        this.release = render(RELEASE, quoted);
        this.outboxTableShape = render(OUTBOX_TABLE_SHAPE, quoted);
        this.drawServerToken = render(DRAW_SERVER_TOKEN, quoted);
        this.serverCheck = render(SERVER_CHECK, quoted);
        this.rebaseLock = render(REBASE_LOCK, quoted);
        this.rebase = render(REBASE, quoted);
        this.positions = render(POSITIONS, quoted);
        this.diffStart = render(DIFF_START, quoted);
        this.diffStartByIndex = INDEX_READS + ";\n" + diffStart;
        this.diffPageByIndex = INDEX_READS + ";\n" + render(DIFF_PAGE, quoted);
        this.settlePage = render(SETTLE_PAGE, quoted);
        this.settlePageWithRetries = render(SETTLE_PAGE_WITH_RETRIES, quoted);
        this.pendingRetryKeys = render(PENDING_RETRY_KEYS, quoted);
        this.pendingRetries = render(PENDING_RETRIES, quoted);
        this.settleRetries = render(SETTLE_RETRIES, quoted);
        this.listDead = render(LIST_DEAD, quoted);
        this.requeueOne = render(REQUEUE_ONE, quoted);
        this.requeueSome = render(REQUEUE_SOME, quoted);
        this.deleteDead = render(DELETE_DEAD, quoted);
        this.countPending = render(COUNT_PENDING, quoted);
        this.oldestPendingAge = render(OLDEST_PENDING_AGE, quoted);
        this.countDead = render(COUNT_DEAD, quoted);
        this.latencyBounds = render(LATENCY_BOUNDS, quoted);
        this.recordStats = render(RECORD_STATS, quoted);
    }

    /**
     * Fills a template's placeholders: the partition, over the configured {@code :partitions}, of an
     * event row {@code e} ({@code <event_partition>}), a candidate row {@code c} ({@code
     * <candidate_partition>}), a retry row {@code r} ({@code <retry_partition>}) and a bare ordering hash
     * ({@code <key_partition>}); over the partitions the positions hold ({@code <backlog_partition>}, in
     * {@link #UNCONSUMED}); and the schema, last, since the others may name it.
     */
    private static String render(String template, String quotedSchema) {
        return template.replace("<on_this_server>", ON_THIS_SERVER)
                .replace("<event_partition>", partitionOf("e.ordering_hash", ":partitions"))
                .replace("<candidate_partition>", partitionOf("c.ordering_hash", ":partitions"))
                .replace("<retry_partition>", partitionOf("r.ordering_hash", ":partitions"))
                .replace("<key_partition>", partitionOf("ordering_hash", ":partitions"))
                .replace("<backlog_partition>", partitionOf("e.ordering_hash", "(SELECT nullif(partitions, 0) FROM bounds)"))
                .replace("<schema>", quotedSchema);
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.jdbc.internal.JdbcStatement;

/**
 * Every SQL statement of this module, by name. Templates name the schema as {@code <schema>}; an
 * instance holds them rendered once for a validated schema name, so no identifier is ever
 * concatenated from unchecked input and no statement is rebuilt per call. The executor's own
 * statements are {@link JdbcStatement}s run on plain JDBC on the handle's connection, so the
 * caller's Jdbi configuration (template engine, SQL parser, statement customizers) never touches
 * them; the sweeper's and the operator's run on a Jdbi of their own and stay plain text. Named
 * {@code ExecutorSql} so it does not collide with Jdbi's {@code SqlStatements}.
 */
final class ExecutorSql {

    /**
     * Puts back the lock_timeout the claim saved, for the callback's own statements; needed only when
     * the key was reclaimed rather than inserted (an insert restores it in its RETURNING clause), and
     * before a claim's second round, whose insert saves the setting again.
     */
    static final JdbcStatement RESTORE_LOCK_TIMEOUT = JdbcStatement.of("""
            SELECT set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true)""");

    /**
     * The savepoint a callback's writes roll back to when it declares a business failure, so that the
     * key row claimed before it stays and stores the failure. Taken and rolled back to by plain SQL
     * (not Jdbi's savepoint bookkeeping), because the executor's own path sends it with the claim.
     */
    static final String CALLBACK_SAVEPOINT = "SAVEPOINT idempotent_callback";

    /** Undoes the callback's writes, keeping the claim; a one-shot statement, like our COMMIT. */
    static final String ROLLBACK_TO_CALLBACK_SAVEPOINT = "ROLLBACK TO SAVEPOINT idempotent_callback";

    /**
     * Join mode: taken in the caller's transaction before the claim, so that a replay or a failure
     * leaves nothing there (the key row, the callback's writes, the claim's lock_timeout setting).
     * Plain SQL with a fixed name, so that it travels with the claim and its release with the
     * completion; names nest (a call inside a callback takes its own, and each release or rollback
     * applies to the latest of that name).
     */
    static final String CLAIM_SAVEPOINT = "SAVEPOINT idempotent_claim";
    static final String RELEASE_CLAIM_SAVEPOINT = "RELEASE SAVEPOINT idempotent_claim";
    /** Join mode: undoes a call's claim and whatever came after it in the caller's transaction, in one flush. */
    static final String UNDO_CLAIM = "ROLLBACK TO SAVEPOINT idempotent_claim;\nRELEASE SAVEPOINT idempotent_claim";

    /**
     * Our COMMIT and ROLLBACK: texts of our own, so that no other code on the connection can have
     * prepared them under a name ({@link PgTransactions}).
     */
    static final String COMMIT = "COMMIT /* idempotency executor */";
    static final String ROLLBACK = "ROLLBACK /* idempotency executor */";

    /**
     * Our BEGIN, sent ahead of the claim in the same execution ({@link #beginThenClaimForCallback})
     * on a connection in autocommit. pgjdbc would send its own as a simple query, which PostgreSQL
     * answers with a send of its own before it reads the claim: a wake-up more on each side per call.
     */
    static final String BEGIN = "BEGIN /* idempotency executor */";

    /** The running transaction's isolation level, as PostgreSQL names it (e.g. {@code read committed}). */
    static final JdbcStatement CURRENT_ISOLATION = JdbcStatement.of("""
            SELECT current_setting('transaction_isolation')""");

    /**
     * Claims a key; returns a row only when it inserted one. Against a concurrent caller's
     * uncommitted row it blocks on PostgreSQL's own row lock until that transaction ends; against a
     * committed row it inserts nothing.
     *
     * <p>The wait is bounded by the wait budget without extra round trips: the innermost subquery
     * saves the connection's lock_timeout in a transaction-local setting, the next one sets
     * lock_timeout to the budget (OFFSET 0 keeps them apart and in that order), and only then is the
     * row inserted. RETURNING, evaluated only for an inserted row, puts lock_timeout back, so the
     * callback's statements are not bounded by our budget.
     *
     * <p>That order is what the tests prove: the budget bounds the wait on the key
     * ({@code ConcurrentDuplicatesTest.aDuplicateThatWaitsPastTheBudgetGetsInProgressAndRunsNothing},
     * {@code CallbackLockTimeoutTest.aClaimWaitingOnTheKeyPastTheWaitBudgetIsStillInProgress}) and the
     * callback sees the connection's own setting again, after an insert
     * ({@code FirstRunAndReplayTest.theCallbacksOwnStatementsKeepTheConnectionsLockTimeout}) and after a
     * reclaim ({@code RetentionTest.aReclaimedKeysCallbackKeepsTheConnectionsLockTimeout}).
     */
    private static final String CLAIM_KEY = """
            INSERT INTO <schema>.idempotency_keys
                (tenant_id, idempotency_key, status, request_fingerprint, lease_token, lease_expires_at, expires_at)
            SELECT :tenant, :key, 'processing', :fingerprint,
                   :leaseToken, now() + make_interval(secs => :leaseSeconds),
                   now() + make_interval(secs => :retentionSeconds)
            FROM (SELECT set_config('lock_timeout', :waitBudget, true)
                  FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)
                        OFFSET 0) AS saved
                  OFFSET 0) AS bounded
            ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
            RETURNING set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true)""";

    /**
     * A row whose outcome is settled: completed, or failed with a known failure. Only these may be
     * reclaimed or purged once expired. A {@code processing} row (a live lease, or one that ran out
     * and awaits the sweeper) and an unknown outcome ({@code lease_expired}, until an operator
     * resolves it) never are: either could let the external step run twice.
     */
    private static final String SETTLED = """
            (status = 'completed' OR (status = 'failed' AND failure ->> 'code' IS DISTINCT FROM 'lease_expired'))""";

    /**
     * Every statement that settles a key clears its lease (NULL stays NULL for a key without one), so
     * the sweeper's index of leases (V5: lease_expires_at, where set) holds only leases still to settle
     * and unknown outcomes. The completion of a key without a lease then changes no indexed column and
     * PostgreSQL rewrites the row in place (HOT): no new index entries, no dead ones.
     */
    private static final String LEASE_SETTLED = "lease_token = NULL, lease_expires_at = NULL";

    /**
     * Reads what a key holds after a claim found it taken; expiry and leases are judged by the
     * database clock. {@code reclaimable}: expired and settled. {@code lease_ran_out}: a committed
     * lease whose holder overran or died, not yet recorded as an unknown outcome by the sweeper.
     */
    private static final String FIND_KEY = """
            SELECT status, request_fingerprint, result, result_type, failure,
                   expires_at <= now() AND <settled> AS reclaimable,
                   status = 'processing' AND lease_expires_at <= now() AS lease_ran_out
            FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key""";

    /**
     * Takes over an expired, settled key in one statement: of several callers racing, the first to
     * lock the row wins; the others re-check the condition on the winner's version and update nothing.
     */
    private static final String RECLAIM_EXPIRED_KEY = """
            UPDATE <schema>.idempotency_keys
            SET status = 'processing', request_fingerprint = :fingerprint,
                result = NULL, result_type = NULL, failure = NULL,
                lease_token = :leaseToken, lease_expires_at = now() + make_interval(secs => :leaseSeconds),
                created_at = now(), updated_at = now(),
                expires_at = now() + make_interval(secs => :retentionSeconds)
            WHERE tenant_id = :tenant AND idempotency_key = :key AND expires_at <= now() AND <settled>""";

    /**
     * Lease mode, second transaction: confirms this caller still holds the lease (same token, not
     * run out, not failed by the sweeper) and locks the row until commit so no sweeper can fail it
     * under us. Zero rows means the lease was lost.
     */
    private static final String CONFIRM_LEASE = """
            UPDATE <schema>.idempotency_keys
            SET updated_at = now()
            WHERE tenant_id = :tenant AND idempotency_key = :key
              AND status = 'processing' AND lease_token = :leaseToken AND lease_expires_at > now()""";

    /** Lease mode: the external step failed before any effect was known; frees the key for a retry. */
    private static final String RELEASE_LEASE = """
            DELETE FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key AND status = 'processing' AND lease_token = :leaseToken""";

    /** Lease mode: stores a business failure of the external step, if the lease is still ours. */
    private static final String FAIL_LEASED_KEY = """
            UPDATE <schema>.idempotency_keys
            SET status = 'failed', failure = CAST(:failure AS jsonb), updated_at = now(), <lease_settled>
            WHERE tenant_id = :tenant AND idempotency_key = :key AND status = 'processing' AND lease_token = :leaseToken""";

    /** Lease mode: when the lease just taken runs out, for the caller's information. */
    private static final String FIND_LEASE_EXPIRY = """
            SELECT lease_expires_at FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key""";

    /** The setting {@link #REQUIRE_ONE_KEY_ROW} reads, and so names in its error, when a completion matched no key row. */
    static final String KEY_ROW_MISSING = "idempotency.completion_found_no_key_row";

    /**
     * Ends a completion: one row when the update matched exactly the claimed key row; otherwise the
     * statement fails (reading a setting nobody sets raises 42704 naming {@link #KEY_ROW_MISSING}),
     * which aborts the transaction, so a COMMIT sent with it in the same flush commits nothing. Zero
     * rows happen only when the callback deleted its own key row, or a pooler ran another client's
     * statement. The check is in SQL so that the COMMIT need not wait for the client to read a count.
     */
    private static final String REQUIRE_ONE_KEY_ROW = "SELECT CASE WHEN count(*) = 1 THEN 1 ELSE CAST(current_setting('"
            + KEY_ROW_MISSING + "') AS int) END\nFROM completed";

    /**
     * The part of every completion that stores the result in the claimed key row, as a CTE named
     * {@code completed}, and fails unless it updated that row ({@link #REQUIRE_ONE_KEY_ROW}).
     */
    private static final String STORE_RESULT = """
            completed AS (
                UPDATE <schema>.idempotency_keys
                SET status = 'completed', result = CAST(:result AS jsonb), result_type = :resultType, updated_at = now(),
                    <lease_settled>
                WHERE tenant_id = :tenant AND idempotency_key = :key
                RETURNING 1)
            <require_one_key_row>""";

    /** Stores the callback's result ({@link #STORE_RESULT}). */
    private static final String COMPLETE_KEY = """
            WITH <store_result>""";

    /** Stores a declared business failure (its business writes were rolled back to a savepoint). */
    private static final String FAIL_KEY = """
            UPDATE <schema>.idempotency_keys
            SET status = 'failed', failure = CAST(:failure AS jsonb), updated_at = now(), <lease_settled>
            WHERE tenant_id = :tenant AND idempotency_key = :key""";

    /** Marks a key whose callback committed the transaction itself; outside any lease. */
    private static final String FAIL_ABANDONED_KEY = """
            UPDATE <schema>.idempotency_keys
            SET status = 'failed', failure = CAST(:failure AS jsonb), updated_at = now()
            WHERE tenant_id = :tenant AND idempotency_key = :key AND status = 'processing' AND lease_token IS NULL""";

    /**
     * The trace context columns (V9) of the outbox insert in {@link #COMPLETE_KEY_WITH_EVENTS} and
     * {@link #COMPLETE_KEY_WITH_ONE_EVENT}: rendered empty for events without one, so a transaction
     * with tracing off sends the statements it always sent (and runs on a schema before V9); rendered
     * with the columns (nullable, bound per event) when one of its events has a context. They change
     * nothing about the statements' locking.
     */
    private static final String TRACE_COLUMNS = ", traceparent, tracestate";
    private static final String TRACE_VALUES = ", :traceparent, :tracestate";
    private static final String TRACE_ROW_VALUES = ", e.traceparent, e.tracestate";
    private static final String TRACE_ARRAYS = ", CAST(:traceparents AS text[]), CAST(:tracestates AS text[])";

    /**
     * Stores the result together with the transaction's outbox events, in one statement that fails
     * unless it updated the claimed row ({@link #REQUIRE_ONE_KEY_ROW}).
     *
     * <p>Writers of one ordering key (tenant, topic, partition key) are serialised until commit by
     * an advisory lock on its hash, so that per key outbox ids are drawn in commit order and a relay
     * never sees a lower id commit after a higher one. The locks sit in an InitPlan of the event
     * insert's WHERE clause: it runs once, before any event row reaches the insert and so before any
     * id is drawn; keys are locked in hash order so two writers cannot deadlock. Events are inserted
     * in the order the callback emitted them.
     *
     * <p>Since migration V8 the outbox's trigger takes the same lock for every row any writer inserts
     * and draws the id after it; here each row finds its key locked already and goes on. The executor
     * keeps its own locks: they take all of a call's keys in hash order before the first row (the
     * trigger alone takes them in emission order, and two calls emitting the same keys in opposite
     * orders could deadlock), and they keep the order on a database not yet migrated to V8.
     *
     * <p>Proved by {@code OutboxTest.aWriterOfTheSameOrderingKeyWaitsForTheOtherToCommitSoIdsFollowCommitOrder}
     * (the lock is taken before any id is drawn) and
     * {@code OutboxTest.eventsCommitWithTheResultInTheOrderTheCallbackEmittedThem} (emission order).
     */
    private static final String COMPLETE_KEY_WITH_EVENTS = """
            WITH events AS (
                INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers<trace_columns>)
                SELECT :tenant, e.topic, e.partition_key, CAST(e.payload AS jsonb), CAST(e.headers AS jsonb)<trace_row_values>
                FROM unnest(CAST(:topics AS text[]), CAST(:partitionKeys AS text[]),
                            CAST(:payloads AS text[]), CAST(:headers AS text[])<trace_arrays>)
                     WITH ORDINALITY AS e(topic, partition_key, payload, headers<trace_columns>, n)
                WHERE (SELECT count(*)
                       FROM (SELECT pg_advisory_xact_lock(:lockSpace, hash)
                             FROM (SELECT DISTINCT hashtext(ordering_key) AS hash
                                   FROM unnest(CAST(:orderingKeys AS text[])) AS ordering_key
                                   ORDER BY 1 OFFSET 0) AS ordered) AS locks) >= 0
                ORDER BY e.n),
            <store_result>""";

    /**
     * {@link #COMPLETE_KEY_WITH_EVENTS} for the usual callback, which emits one event: the same
     * statement and the same locking without the arrays, the sort and the distinct that several
     * events need, which PostgreSQL pays for per statement (benchmarks/HISTORY.md, "Issue 14: one
     * event without arrays"). The ordering key's lock is an InitPlan gating the insert (a one-time
     * filter), so it is taken before the row's id is drawn, as above. V8's trigger would take it alone;
     * without it here executor.sql's latency was 0.6 to 0.9% lower (pgbench, both forms in one run, 1
     * and 8 clients), within the noise, and a database not yet at V8 would lose the order: it stays.
     *
     * <p>Proved by the same tests, run with one event and with two.
     */
    private static final String COMPLETE_KEY_WITH_ONE_EVENT = """
            WITH event AS (
                INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers<trace_columns>)
                SELECT :tenant, :topic, :partitionKey, CAST(:payload AS jsonb), CAST(:headers AS jsonb)<trace_values>
                WHERE (SELECT count(*)
                       FROM (SELECT pg_advisory_xact_lock(:lockSpace, hashtext(:orderingKey))) AS locked) = 1),
            <store_result>""";

    /**
     * Fails leases that ran out (lease mode): the holder crashed or overran, so whether its external
     * step took effect is unknown. The row then stays (never reclaimed, never purged) until an
     * operator resolves it. SKIP LOCKED lets several sweepers share the work without waiting; a
     * holder confirming its lease locks the row, so it is skipped rather than failed under it.
     */
    private static final String FAIL_EXPIRED_LEASES = """
            UPDATE <schema>.idempotency_keys AS k
            SET status = 'failed', updated_at = now(),
                failure = jsonb_build_object(
                    'code', 'lease_expired',
                    'message', 'The lease on this key ran out before its work completed; whether the external '
                            || 'step took effect is unknown. Reconcile it before acting on this key again.',
                    'details', jsonb_build_object('lease_expired_at', k.lease_expires_at::text))
            WHERE (k.tenant_id, k.idempotency_key) IN (
                SELECT tenant_id, idempotency_key FROM <schema>.idempotency_keys
                WHERE status = 'processing' AND lease_expires_at <= now()
                ORDER BY lease_expires_at
                LIMIT :batchSize
                FOR UPDATE SKIP LOCKED)""";

    /**
     * Deletes settled keys past retention, a bounded batch at a time. Keys under a lease (live or
     * run out) and unknown outcomes stay, whatever their expiry, until resolved.
     */
    private static final String PURGE_EXPIRED_KEYS = """
            DELETE FROM <schema>.idempotency_keys
            WHERE (tenant_id, idempotency_key) IN (
                SELECT tenant_id, idempotency_key FROM <schema>.idempotency_keys
                WHERE expires_at < now() AND <settled>
                ORDER BY expires_at
                LIMIT :batchSize
                FOR UPDATE SKIP LOCKED)""";

    /**
     * Retention of outbox events, step 1 of a rotation: the generation writers use now, if the last
     * rotation is at least half a retention old. Locks the one row of outbox_generation until the
     * rotation commits, so two sweepers never rotate at once; SKIP LOCKED lets a second sweeper go
     * on without waiting (the first is rotating). Writers read this row without locks (the default
     * of outbox_events.generation) and never wait on it. Events stay at least a retention because a
     * generation, once left, is truncated only two rotations later.
     */
    private static final String DUE_GENERATION = """
            SELECT current_generation FROM <schema>.outbox_generation
            WHERE rotated_at <= now() - make_interval(secs => :halfRetentionSeconds)
            FOR UPDATE SKIP LOCKED""";

    /**
     * Bounds every lock wait of the rotation's transaction (its own setting, gone at commit): a
     * sweeper queued for a partition's ACCESS EXCLUSIVE lock makes every later reader of that
     * partition (the relays' reads of the whole outbox) queue behind it, so it gives up quickly
     * and tries again at the next sweep instead.
     */
    private static final String ROTATION_LOCK_TIMEOUT = """
            SELECT set_config('lock_timeout', :lockTimeout, true)""";

    /**
     * Records one sweep in sweeper_runs (V10), in one statement at its end: when it started and ended
     * (database clock: the end is clock_timestamp(), the start that less the duration the sweeper measured),
     * what it changed and its error, if any. The same statement keeps both V10 tables bounded: it deletes
     * the runs beyond the last 10,000 and those older than 7 days, and outbox_relay_stats' buckets older
     * than 24 hours (a range of its primary key; relays write only the current bucket).
     * Locks: the new row, and the old rows it deletes, for this one autocommit statement; two sweepers
     * deleting the same old rows wait for each other that long, and the second finds them gone.
     */
    private static final String RECORD_SWEEP = """
            WITH run AS (
                INSERT INTO <schema>.sweeper_runs
                    (sweeper, started_at, finished_at, leases_failed, keys_purged, events_purged, error)
                VALUES (:sweeper, clock_timestamp() - :durationMillis * interval '1 millisecond', clock_timestamp(),
                        :leasesFailed, :keysPurged, :eventsPurged, :error)
                RETURNING id
            ), old_runs AS (
                DELETE FROM <schema>.sweeper_runs
                WHERE id <= (SELECT id FROM run) - 10000 OR finished_at < now() - interval '7 days'
            ), old_stats AS (
                DELETE FROM <schema>.outbox_relay_stats WHERE bucket_start < now() - interval '24 hours'
            )
            SELECT id FROM run""";

    /**
     * The relay's virtual partition of an ordering hash {@code <ordering_hash>}: its low 31 bits modulo
     * the partition count {@code <partitions>}. The one definition in this module ({@link #partitionOf});
     * outbox-relay's RelaySql renders the same, and migrations V2, V4 and V7 (applied, so never edited)
     * wrote it out.
     */
    private static final String PARTITION_OF = "(<ordering_hash> & 2147483647) % <partitions>";

    /**
     * {@link #PARTITION_OF} of {@code orderingHash} (a column) over {@code partitions} (a count, or an
     * expression giving one).
     */
    static String partitionOf(String orderingHash, String partitions) {
        return PARTITION_OF.replace("<ordering_hash>", orderingHash).replace("<partitions>", partitions);
    }

    /**
     * The virtual partition of an event row {@code e}, over as many partitions as the relays created
     * (NULL when no relay ever ran), as outbox_event_states computes it.
     */
    private static final String EVENT_PARTITION = partitionOf("e.ordering_hash",
            "(SELECT nullif(count(*), 0) FROM <schema>.outbox_relay_partitions)");

    /**
     * The event rows {@code e} of one generation table, each with its virtual partition's relay
     * position {@code p} as this server trusts it (V7's outbox_relay_positions: a position written on
     * another server, by a dump restored here or a logical-replication cut-over, consumes nothing), or
     * none when no relay ever ran (then nothing is consumed), as outbox_event_states joins them.
     */
    private static final String EVENTS_WITH_POSITIONS = """
            <schema>.outbox_events_<generation> e
            LEFT JOIN <schema>.outbox_relay_positions p
                   ON p.partition_no = <event_partition>""";

    /**
     * Whether such an event has been consumed by the relays: V7's outbox_event_consumed, the one
     * definition (its partition's consumed snapshot sees its transaction, or the batch under way sees
     * it and has passed its id), which PostgreSQL inlines.
     */
    private static final String CONSUMED = """
            <schema>.outbox_event_consumed(e.txid, e.id, p.consumed_snapshot, p.batch_snapshot, p.batch_cursor)""";

    /**
     * Step 2: counts the next generation's events, and those not consumed yet, BEFORE locking it,
     * so the full scan holds only ACCESS SHARE (relays and writers go on) and a generation still in
     * use is refused without ever taking the exclusive lock. Returns the statement's own snapshot:
     * exactly the rows this count saw. Consumed is for good (relay positions only move forward).
     */
    private static final String COUNT_GENERATION = """
            SELECT pg_current_snapshot()::text AS snapshot, count(*) AS events,
                   count(*) FILTER (WHERE NOT <consumed>) AS unconsumed
            FROM <events_with_positions>""";

    /**
     * Step 3: ACCESS EXCLUSIVE on the next generation's table until commit. It waits for every
     * transaction still open that inserted into it (an inserter holds ROW EXCLUSIVE on the table
     * its rows went to until it ends; writers into the current generation lock only that one) and
     * for reads of the whole outbox under way, at most the lock_timeout. Once granted, nobody can
     * add a row to it before the TRUNCATE.
     */
    private static final String LOCK_GENERATION = """
            LOCK TABLE <schema>.outbox_events_<generation> IN ACCESS EXCLUSIVE MODE""";

    /**
     * Step 4, under that lock: the rows step 2 could not see, i.e. those of transactions that were
     * in flight or not yet started at its snapshot (a transaction id below that snapshot's xmin had
     * ended by then, so the index on txid bounds this to recent rows), counted and checked again.
     */
    private static final String COUNT_GENERATION_SINCE = """
            SELECT count(*) AS events, count(*) FILTER (WHERE NOT <consumed>) AS unconsumed
            FROM <events_with_positions>
            WHERE e.txid >= pg_snapshot_xmin(CAST(:snapshot AS pg_snapshot))
              AND NOT pg_visible_in_snapshot(e.txid, CAST(:snapshot AS pg_snapshot))""";

    /**
     * Step 5, under the same lock: removes the whole generation at once (no dead tuples, no
     * per-row WAL). Every row in it was verified consumed; retry and dead-letter copies live in
     * outbox_retries and stay.
     */
    private static final String TRUNCATE_GENERATION = """
            TRUNCATE <schema>.outbox_events_<generation>""";

    /**
     * Step 6: writers go to the emptied generation from their next statement on (the row locked in
     * step 1). A writer whose statement (or REPEATABLE READ snapshot) still sees the old value
     * inserts into the generation just left, which stays two more rotations; one whose snapshot is
     * older still may hit a table being rotated, and then waits for its lock or is checked under
     * it like any row. rotated_at is the clock at the end: every writer that saw the old value
     * started before it, so its event is kept at least a retention after its created_at.
     */
    private static final String SWITCH_GENERATION = """
            UPDATE <schema>.outbox_generation
            SET current_generation = :generation, rotated_at = clock_timestamp()""";

    /**
     * Batch consumer: the keys of a batch, one row each, from two parallel arrays (tenants, keys). The
     * consumer sends each (tenant, key) once, so no statement below meets a key twice.
     */
    private static final String BATCH_KEYS = "unnest(CAST(:tenants AS text[]), CAST(:keys AS text[])) AS b(tenant, k)";

    /**
     * Batch consumer: the key row of each key of {@link #BATCH_KEYS} that has one, found by its primary
     * key, one index lookup per key. The {@code LATERAL ... LIMIT 1} is why: joined plainly, a plan
     * PostgreSQL cached while the keys table was small (a new deployment, after a TRUNCATE) hashes the
     * batch and scans the whole table, at every batch, until autovacuum next analyzes the table.
     */
    private static final String BATCH_KEY_ROWS = """
            <batch_keys>
            CROSS JOIN LATERAL (SELECT ctid AS row_id, * FROM <schema>.idempotency_keys
                                WHERE tenant_id = b.tenant AND idempotency_key = b.k LIMIT 1) AS s""";

    /**
     * Batch consumer: the physical row ({@code ctid}, {@code row_id}) of each key row of {@link #BATCH_KEY_ROWS}, for an
     * update or delete of those rows that plans as those lookups do. Only rows this transaction
     * claimed are updated or deleted this way; its row locks keep them where they are until it ends.
     */
    private static final String BATCH_KEY_ROW_IDS = """
            (SELECT s.row_id FROM <batch_key_rows>) AS claimed""";

    /**
     * Batch consumer: claims every key of a batch in one execution of three statements (one Sync, one
     * round trip): bounds lock_timeout to the wait budget (saving the connection's own, as
     * {@link #CLAIM_KEY} does), inserts the batch's keys with {@code ON CONFLICT DO NOTHING} and
     * returns those it inserted with their physical rows (for {@link #SEAL_BATCH_CLAIMS}), and puts
     * lock_timeout back. The keys it did not insert are then read
     * ({@link #READ_BATCH_KEYS}): a batch of new messages reads nothing.
     *
     * <p>It inserts them as {@code :status}: 'completed' with the consumer's result already, when the
     * batch runs without savepoints on a schema with V11's check, else 'processing', to be completed
     * ({@link #COMPLETE_BATCH}). On a schema with V11's check {@code :batchClaims} is 'open': it marks
     * the transaction (idempotency.batch_claims, transaction-local) so that the key rows it inserts
     * commit only with the consumer's own commit ({@link #SEAL_BATCH_CLAIMS}); before V11 it is empty.
     *
     * <p>Locking: the insert takes the row lock of each key it inserts, in (tenant, key) order, until
     * the batch's transaction ends; against a concurrent caller's uncommitted row of the same key it
     * waits on PostgreSQL's row lock until that transaction ends (then inserts if it rolled back,
     * else inserts nothing), bounded by the budget: past it the statement fails with 55P03, the batch
     * rolls back and nothing of it ran. The sorted order makes two batches that share keys wait for
     * each other rather than deadlock. Against a committed row it inserts nothing and locks nothing,
     * so a replayed batch writes nothing.
     */
    private static final String CLAIM_BATCH = """
            SELECT set_config('lock_timeout', :waitBudget, true), set_config('idempotency.batch_claims', :batchClaims, true)
            FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)
                  OFFSET 0) AS saved;
            INSERT INTO <schema>.idempotency_keys (tenant_id, idempotency_key, status, result, result_type, expires_at)
            SELECT b.tenant, b.k, :status, CAST(:result AS jsonb), :resultType, now() + make_interval(secs => :retentionSeconds)
            FROM <batch_keys>
            ORDER BY b.tenant, b.k
            ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
            RETURNING tenant_id, idempotency_key, ctid;
            SELECT set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true)""";

    /** The setting {@link #SEAL_BATCH_CLAIMS} reads, and so names in its error, when the claims are not all in its transaction. */
    static final String BATCH_CLAIMS_MISSING = "idempotency.batch_claims_missing_at_commit";

    /**
     * Batch consumer: seals the claims {@link #CLAIM_BATCH} stored completed, so that the commit sent
     * with it can commit them (V11's deferred check lets only a sealed transaction commit such rows). It
     * fails, naming {@link #BATCH_CLAIMS_MISSING}, unless the transaction is still the one that claimed
     * and holds all {@code :expected} of them completed: the mark is transaction-local, so a handler that
     * committed or rolled back took it with it, and a handler that deleted a claim leaves fewer rows.
     * Failing aborts the transaction, so the commit sent with it commits nothing of the batch. It
     * stores what {@link #COMPLETE_BATCH}'s count check stored: all the batch's outcomes or none.
     *
     * <p>It finds the claims by the physical rows ({@code ctid}) the claim returned, {@code :rowIds}: a
     * TID scan per row instead of an index lookup per key (pgbench sending a batch of 100, six alternating
     * runs: this flush 0.62 to 0.71 ms instead of 0.83 to 1.02, 1.06 times as many batches per second).
     * The {@code LATERAL ... LIMIT 1} keeps it a TID scan per row in a plan cached while the table looked
     * empty, as {@link #BATCH_KEY_ROWS} keeps its index lookups; a plain {@code ctid = ANY} planned there
     * as a scan of the whole table. Those rows stay where they are until the transaction ends:
     * their row locks are ours, and no vacuum removes what an open transaction wrote. A handler that
     * updated or deleted a claim leaves no visible row at its ctid, so the count falls short and the
     * commit is refused. The claims whose rows the consumer itself rewrote since, storing a call's
     * events with them ({@link #COMPLETE_KEY_WITH_EVENTS}), are found by key instead ({@code :tenants},
     * {@code :keys}, {@link #BATCH_KEY_ROWS}): none in a batch without events.
     * Locking: reads rows this transaction inserted, and takes no lock.
     */
    private static final String SEAL_BATCH_CLAIMS = """
            SELECT CASE WHEN (SELECT count(*) FROM unnest(CAST(:rowIds AS tid[])) AS r(row_id)
                              CROSS JOIN LATERAL (SELECT status FROM <schema>.idempotency_keys
                                                  WHERE ctid = r.row_id LIMIT 1) AS s
                              WHERE s.status = 'completed')
                             + (SELECT count(*) FROM <batch_key_rows> WHERE s.status = 'completed') = :expected
                         AND current_setting('idempotency.batch_claims', true) = 'open'
                        THEN set_config('idempotency.batch_claims', 'sealed', true)
                        ELSE current_setting('<batch_claims_missing>') END""";

    /**
     * Batch consumer: {@link #SEAL_BATCH_CLAIMS} and our {@link #COMMIT} in one execution (one Sync, one
     * round trip), as {@link #COMPLETE_BATCH_THEN_COMMIT}: when the seal fails, PostgreSQL skips the
     * COMMIT and the batch rolls back.
     */
    private static final String SEAL_BATCH_CLAIMS_THEN_COMMIT = SEAL_BATCH_CLAIMS + ";\n" + COMMIT;

    /**
     * Batch consumer: whether the schema has V11's check, {@code idempotency_keys_batch_claims_sealed},
     * without which no claim is stored completed. Reads the catalog once per consumer.
     */
    private static final String FIND_BATCH_CLAIMS_CHECK = """
            SELECT EXISTS (SELECT 1 FROM pg_trigger
                           WHERE tgrelid = CAST('<schema>.idempotency_keys' AS regclass)
                             AND tgname = 'idempotency_keys_batch_claims_sealed')""";

    /**
     * Batch consumer: what each key of a batch that {@link #CLAIM_BATCH} did not insert holds, to
     * replay it. It runs after the claim has finished, so at READ COMMITTED it sees what the rows the
     * claim waited for committed; it takes no lock.
     */
    private static final String READ_BATCH_KEYS = """
            SELECT s.tenant_id, s.idempotency_key, s.status, CAST(s.failure AS text) AS failure,
                   s.expires_at <= now() AND <settled> AS reclaimable
            FROM <batch_key_rows>""";

    /**
     * Batch consumer: stores the same result (the consumer's {@code true}) in every key of a batch
     * whose handler ran, in one statement, and fails ({@link #KEY_ROW_MISSING}) unless it updated
     * exactly {@code :expected} rows, which aborts the batch's transaction. It updates only rows this
     * transaction claimed, whose row locks it already holds: it waits for nobody.
     */
    private static final String COMPLETE_BATCH = """
            WITH completed AS (
                UPDATE <schema>.idempotency_keys AS s
                SET status = 'completed', result = CAST(:result AS jsonb), result_type = :resultType, updated_at = now()
                FROM <batch_key_row_ids>
                WHERE s.ctid = claimed.row_id AND s.status = 'processing'
                RETURNING 1)
            SELECT CASE WHEN count(*) = :expected THEN 1 ELSE CAST(current_setting('<key_row_missing>') AS int) END
            FROM completed""";

    /**
     * Batch consumer: {@link #COMPLETE_BATCH} and our {@link #COMMIT} in one execution (one Sync, one
     * round trip), where no pooler can hand our named statements to another client (as a call's
     * completion travels with its COMMIT, {@link #thenCommit}). When the completion fails (its count
     * check, or a transaction a handler's caught error aborted), PostgreSQL skips the COMMIT and the
     * batch rolls back. Locking: the completion's, then the commit releases every lock of the batch.
     */
    private static final String COMPLETE_BATCH_THEN_COMMIT = COMPLETE_BATCH + ";\n" + COMMIT;

    /**
     * Batch consumer: removes the claims of the messages whose handler failed (their writes were
     * rolled back to their savepoint), so the batch commits nothing of them and a redelivery runs
     * them again. Only rows this transaction claimed (and so already holds locked) are touched.
     */
    private static final String RELEASE_BATCH_CLAIMS = """
            DELETE FROM <schema>.idempotency_keys AS s
            USING <batch_key_row_ids>
            WHERE s.ctid = claimed.row_id AND s.status = 'processing'""";

    /**
     * Batch consumer: takes one failed-attempt slot of a message (a key of its own, stored completed
     * as the one-message consumer's executor call stores it), or an expired, settled one as the
     * executor would reclaim it; one row when taken. Locking: the row lock of the slot's key until the
     * batch ends; against a concurrent attempt's uncommitted slot it waits for that transaction (at
     * most the connection's lock_timeout), then moves on to the next slot. A taken slot that is not
     * reclaimable is locked too (ON CONFLICT DO UPDATE locks the row it checks), which only failures reach.
     */
    private static final String TAKE_ATTEMPT_SLOT = """
            INSERT INTO <schema>.idempotency_keys AS s (tenant_id, idempotency_key, status, result, result_type, expires_at)
            VALUES (:tenant, :key, 'completed', CAST(:result AS jsonb), :resultType,
                    now() + make_interval(secs => :retentionSeconds))
            ON CONFLICT (tenant_id, idempotency_key) DO UPDATE
            SET status = 'completed', result = EXCLUDED.result, result_type = EXCLUDED.result_type, failure = NULL,
                request_fingerprint = NULL, <lease_settled>, created_at = now(), updated_at = now(),
                expires_at = EXCLUDED.expires_at
            WHERE s.expires_at <= now()
              AND (s.status = 'completed' OR (s.status = 'failed' AND s.failure ->> 'code' IS DISTINCT FROM 'lease_expired'))
            RETURNING 1""";

    /** Keys the sweeper failed because their lease ran out: outcomes an operator must reconcile. */
    private static final String LIST_UNKNOWN_OUTCOMES = """
            SELECT tenant_id, idempotency_key, created_at, lease_expires_at
            FROM <schema>.idempotency_keys
            WHERE status = 'failed' AND failure ->> 'code' = 'lease_expired'
            ORDER BY lease_expires_at, tenant_id, idempotency_key
            LIMIT :limit""";

    /**
     * Operator: the external step did take effect; replays get this result from now on, for at least
     * one more retention (an unknown outcome usually outlived its own).
     */
    private static final String RESOLVE_UNKNOWN_AS_COMPLETED = """
            UPDATE <schema>.idempotency_keys
            SET status = 'completed', failure = NULL, result = CAST(:result AS jsonb), result_type = :resultType,
                <lease_settled>, updated_at = now(), expires_at = greatest(expires_at, now() + make_interval(secs => :retentionSeconds))
            WHERE tenant_id = :tenant AND idempotency_key = :key
              AND status = 'failed' AND failure ->> 'code' = 'lease_expired'""";

    /** Operator: the external step had a definite business outcome; replays get this failure, as above. */
    private static final String RESOLVE_UNKNOWN_AS_FAILED = """
            UPDATE <schema>.idempotency_keys
            SET failure = CAST(:failure AS jsonb), <lease_settled>, updated_at = now(),
                expires_at = greatest(expires_at, now() + make_interval(secs => :retentionSeconds))
            WHERE tenant_id = :tenant AND idempotency_key = :key
              AND status = 'failed' AND failure ->> 'code' = 'lease_expired'""";

    /** Operator: the external step did not take effect; the next call with the key runs it again. */
    private static final String RESOLVE_UNKNOWN_AS_NOT_RUN = """
            DELETE FROM <schema>.idempotency_keys
            WHERE tenant_id = :tenant AND idempotency_key = :key
              AND status = 'failed' AND failure ->> 'code' = 'lease_expired'""";

    /** The outbox's generation tables, outbox_events_0 to _2 (V4); writers use one, the sweeper empties the next. */
    static final int GENERATIONS = 3;

    /**
     * First key of the advisory lock pair: keeps our locks apart from the application's own. Migration
     * V8's trigger (outbox_events_draw_id) takes the same locks, this number written out, on the hash of
     * the same text as {@link TransactionOutbox} binds (tenant/topic/partition key); the two change together.
     */
    static final int OUTBOX_LOCK_SPACE = 0x1DE3_0B0C;

    final JdbcStatement claimKey;
    /**
     * {@link #CLAIM_KEY}, then {@link #CALLBACK_SAVEPOINT}, in one execution: pgjdbc sends the two
     * with one Sync, so the savepoint costs no round trip of its own. If the claim fails (a wait past
     * the budget), PostgreSQL skips the savepoint and the claim's own error is what the caller gets.
     * If it inserted nothing, the savepoint is harmless: a replay commits (which releases it), and a
     * reclaim takes a new one after its update ({@code KeyClaims}). The read of a row the claim found
     * ({@link #FIND_KEY}) is sent only then, in a round trip of its own: sent with every claim, it
     * took 8 to 10% of a first call's transactions per second at 8 callers (pgbench) to save a
     * replay one round trip, and first calls are most of the calls.
     */
    final JdbcStatement claimForCallback;
    /**
     * {@link #BEGIN}, then {@link #claimForCallback}'s three statements, in one execution: the call's
     * transaction opens with its claim. Sent only on a connection in autocommit, where pgjdbc sends no
     * BEGIN of its own; from the BEGIN on PostgreSQL holds the transaction open, and until Jdbi is told
     * ({@link PgTransactions#begun}) only our own rollback can end it.
     */
    final JdbcStatement beginThenClaimForCallback;
    final JdbcStatement findKey;
    final JdbcStatement reclaimExpiredKey;
    final JdbcStatement completeKey;
    final JdbcStatement failKey;
    final JdbcStatement failAbandonedKey;
    final JdbcStatement confirmLease;
    final JdbcStatement findLeaseExpiry;
    final JdbcStatement releaseLease;
    final JdbcStatement failLeasedKey;
    /** The completions that store a result, alone in their execution. */
    final StoreResult storeResult;
    /** The completions, each with our {@link #COMMIT} after it in the same execution ({@link Completions}). */
    final Completions thenCommit;
    /**
     * The completions, each releasing the claim's savepoint in the caller's transaction after it
     * ({@link #RELEASE_CLAIM_SAVEPOINT}), in join mode.
     */
    final Completions thenReleaseClaim;
    /** Join mode: {@link #CLAIM_SAVEPOINT}, then {@link #claimForCallback}'s three statements, in one execution. */
    final JdbcStatement claimInCallersTransaction;

    /**
     * The statements that store a result and the outbox events of its transaction: for no event, one
     * and several ({@link #COMPLETE_KEY}, {@link #COMPLETE_KEY_WITH_ONE_EVENT},
     * {@link #COMPLETE_KEY_WITH_EVENTS}), each without and with the trace context columns
     * ({@link #TRACE_COLUMNS}); {@link #of} picks the one the transaction's events bind.
     */
    record StoreResult(JdbcStatement completeKey, JdbcStatement completeKeyWithOneEvent, JdbcStatement completeKeyWithEvents,
                       JdbcStatement completeKeyWithOneTracedEvent, JdbcStatement completeKeyWithTracedEvents) {
        /** Each template rendered for {@code quotedSchema}, then {@code after} (empty, or statements run in the same execution). */
        private StoreResult(String quotedSchema, String after) {
            this(JdbcStatement.of(render(COMPLETE_KEY, quotedSchema) + after),
                    JdbcStatement.of(render(COMPLETE_KEY_WITH_ONE_EVENT, quotedSchema) + after),
                    JdbcStatement.of(render(COMPLETE_KEY_WITH_EVENTS, quotedSchema) + after),
                    JdbcStatement.of(renderTraced(COMPLETE_KEY_WITH_ONE_EVENT, quotedSchema) + after),
                    JdbcStatement.of(renderTraced(COMPLETE_KEY_WITH_EVENTS, quotedSchema) + after));
        }

        /** The statement for the events {@code outbox} holds ({@link TransactionOutbox#completion}). */
        JdbcStatement of(TransactionOutbox outbox) {
            return outbox.completion(completeKey, completeKeyWithOneEvent, completeKeyWithEvents,
                    completeKeyWithOneTracedEvent, completeKeyWithTracedEvents);
        }
    }

    /**
     * The statements that store a callback's outcome, each followed in the same execution by the
     * statement that ends the executor's part of the transaction ({@code ending}): pgjdbc sends them
     * with one Sync, so it costs no round trip of its own. A completion that matched no key row
     * fails ({@link #REQUIRE_ONE_KEY_ROW}), and PostgreSQL skips the ending after it.
     *
     * @param storeResult the {@link StoreResult} statements, each then the ending
     * @param failKey a rollback to {@link #CALLBACK_SAVEPOINT}, {@link #FAIL_KEY}, then the ending
     */
    record Completions(StoreResult storeResult, JdbcStatement failKey) {
        private Completions(String quotedSchema, String ending) {
            this(new StoreResult(quotedSchema, ";\n" + ending),
                    JdbcStatement.of(ROLLBACK_TO_CALLBACK_SAVEPOINT + ";\n" + render(FAIL_KEY, quotedSchema) + ";\n" + ending));
        }
    }

    /**
     * The batch consumer's statements ({@link IdempotentBatchConsumer}), rendered apart from the
     * executor's: a batch consumer renders these, not every statement of the module. Run on the batch
     * transaction's connection, as the executor's are.
     */
    static final class BatchStatements {
        /** {@link #CLAIM_BATCH}: the batch's claim, three statements in one execution. */
        final JdbcStatement claimBatch;
        final JdbcStatement readBatchKeys;
        final JdbcStatement reclaimExpiredKey;
        final JdbcStatement completeBatch;
        /** {@link #COMPLETE_BATCH_THEN_COMMIT}: the completion and our COMMIT, in one round trip. */
        final JdbcStatement completeBatchThenCommit;
        final JdbcStatement sealBatchClaims;
        /** {@link #SEAL_BATCH_CLAIMS_THEN_COMMIT}: the seal and our COMMIT, in one round trip. */
        final JdbcStatement sealBatchClaimsThenCommit;
        final JdbcStatement findBatchClaimsCheck;
        final StoreResult storeResult;
        final JdbcStatement failKey;
        final JdbcStatement failAbandonedKey;
        final JdbcStatement releaseBatchClaims;
        final JdbcStatement takeAttemptSlot;

        /** Renders the batch consumer's templates for {@code schema}, which its executor's configuration validated. */
        BatchStatements(String schema) {
            String quoted = '"' + schema + '"';
            this.claimBatch = JdbcStatement.of(render(CLAIM_BATCH, quoted));
            this.readBatchKeys = JdbcStatement.of(render(READ_BATCH_KEYS, quoted));
            this.reclaimExpiredKey = JdbcStatement.of(render(RECLAIM_EXPIRED_KEY, quoted));
            this.completeBatch = JdbcStatement.of(render(COMPLETE_BATCH, quoted));
            this.completeBatchThenCommit = JdbcStatement.of(render(COMPLETE_BATCH_THEN_COMMIT, quoted));
            this.sealBatchClaims = JdbcStatement.of(render(SEAL_BATCH_CLAIMS, quoted));
            this.sealBatchClaimsThenCommit = JdbcStatement.of(render(SEAL_BATCH_CLAIMS_THEN_COMMIT, quoted));
            this.findBatchClaimsCheck = JdbcStatement.of(render(FIND_BATCH_CLAIMS_CHECK, quoted));
            this.storeResult = new StoreResult(quoted, "");
            this.failKey = JdbcStatement.of(render(FAIL_KEY, quoted));
            this.failAbandonedKey = JdbcStatement.of(render(FAIL_ABANDONED_KEY, quoted));
            this.releaseBatchClaims = JdbcStatement.of(render(RELEASE_BATCH_CLAIMS, quoted));
            this.takeAttemptSlot = JdbcStatement.of(render(TAKE_ATTEMPT_SLOT, quoted));
        }
    }

    /**
     * The operator's statements ({@link UnknownOutcomes}), rendered apart from the executor's. Plain
     * text, run on the operator's own Jdbi.
     */
    static final class UnknownOutcomeStatements {
        final String listUnknownOutcomes;
        final String resolveUnknownAsCompleted;
        final String resolveUnknownAsFailed;
        final String resolveUnknownAsNotRun;

        /** Renders the operator's templates for {@code schema}, which its configuration validated. */
        UnknownOutcomeStatements(String schema) {
            String quoted = '"' + schema + '"';
            this.listUnknownOutcomes = render(LIST_UNKNOWN_OUTCOMES, quoted);
            this.resolveUnknownAsCompleted = render(RESOLVE_UNKNOWN_AS_COMPLETED, quoted);
            this.resolveUnknownAsFailed = render(RESOLVE_UNKNOWN_AS_FAILED, quoted);
            this.resolveUnknownAsNotRun = render(RESOLVE_UNKNOWN_AS_NOT_RUN, quoted);
        }
    }

    /**
     * The sweeper's statements ({@link Sweeper}, and its {@link GenerationRotation}), rendered apart from
     * the executor's: a sweeper renders these, not every statement of the module. Plain text, run on the
     * sweeper's own Jdbi.
     */
    static final class SweeperStatements {
        final String failExpiredLeases;
        final String purgeExpiredKeys;
        final String dueGeneration;
        final String rotationLockTimeout;
        /** Per generation 0, 1, 2: {@link #COUNT_GENERATION} and the statements after it, on that table. */
        final String[] countGeneration = new String[GENERATIONS];
        final String[] lockGeneration = new String[GENERATIONS];
        final String[] countGenerationSince = new String[GENERATIONS];
        final String[] truncateGeneration = new String[GENERATIONS];
        final String switchGeneration;
        final String recordSweep;

        /** Renders the sweeper's templates for {@code schema}, which its builder has already validated. */
        SweeperStatements(String schema) {
            String quoted = '"' + schema + '"';
            this.failExpiredLeases = render(FAIL_EXPIRED_LEASES, quoted);
            this.purgeExpiredKeys = render(PURGE_EXPIRED_KEYS, quoted);
            this.dueGeneration = render(DUE_GENERATION, quoted);
            this.rotationLockTimeout = ROTATION_LOCK_TIMEOUT;
            for (int generation = 0; generation < GENERATIONS; generation++) {
                countGeneration[generation] = renderGeneration(COUNT_GENERATION, quoted, generation);
                lockGeneration[generation] = renderGeneration(LOCK_GENERATION, quoted, generation);
                countGenerationSince[generation] = renderGeneration(COUNT_GENERATION_SINCE, quoted, generation);
                truncateGeneration[generation] = renderGeneration(TRUNCATE_GENERATION, quoted, generation);
            }
            this.switchGeneration = render(SWITCH_GENERATION, quoted);
            this.recordSweep = render(RECORD_SWEEP, quoted);
        }
    }

    /**
     * Renders the executor's templates for {@code schema}, which the configuration has already
     * validated; the sweeper's, the batch consumer's and the operator's are rendered by their own
     * classes ({@link SweeperStatements}, {@link BatchStatements}, {@link UnknownOutcomeStatements}).
     */
    ExecutorSql(String schema) {
        String quoted = '"' + schema + '"';
        this.claimKey = JdbcStatement.of(render(CLAIM_KEY, quoted));
        this.claimForCallback = JdbcStatement.of(render(CLAIM_KEY, quoted) + ";\n" + CALLBACK_SAVEPOINT);
        this.beginThenClaimForCallback = JdbcStatement.of(BEGIN + ";\n" + claimForCallback.namedSql());
        this.findKey = JdbcStatement.of(render(FIND_KEY, quoted));
        this.reclaimExpiredKey = JdbcStatement.of(render(RECLAIM_EXPIRED_KEY, quoted));
        this.completeKey = JdbcStatement.of(render(COMPLETE_KEY, quoted));
        this.failKey = JdbcStatement.of(render(FAIL_KEY, quoted));
        this.failAbandonedKey = JdbcStatement.of(render(FAIL_ABANDONED_KEY, quoted));
        this.confirmLease = JdbcStatement.of(render(CONFIRM_LEASE, quoted));
        this.findLeaseExpiry = JdbcStatement.of(render(FIND_LEASE_EXPIRY, quoted));
        this.releaseLease = JdbcStatement.of(render(RELEASE_LEASE, quoted));
        this.failLeasedKey = JdbcStatement.of(render(FAIL_LEASED_KEY, quoted));
        this.storeResult = new StoreResult(quoted, "");
        this.thenCommit = new Completions(quoted, COMMIT);
        this.thenReleaseClaim = new Completions(quoted, RELEASE_CLAIM_SAVEPOINT);
        this.claimInCallersTransaction = JdbcStatement.of(CLAIM_SAVEPOINT + ";\n" + claimForCallback.namedSql());
    }

    private static String render(String template, String quotedSchema) {
        return template.replace("<trace_columns>", "").replace("<trace_values>", "")
                .replace("<trace_row_values>", "").replace("<trace_arrays>", "")
                .replace("<store_result>", STORE_RESULT).replace("<batch_key_row_ids>", BATCH_KEY_ROW_IDS)
                .replace("<batch_key_rows>", BATCH_KEY_ROWS).replace("<batch_keys>", BATCH_KEYS)
                .replace("<key_row_missing>", KEY_ROW_MISSING).replace("<batch_claims_missing>", BATCH_CLAIMS_MISSING)
                .replace("<settled>", SETTLED).replace("<lease_settled>", LEASE_SETTLED)
                .replace("<require_one_key_row>", REQUIRE_ONE_KEY_ROW)
                .replace("<events_with_positions>", EVENTS_WITH_POSITIONS).replace("<event_partition>", EVENT_PARTITION)
                .replace("<consumed>", CONSUMED)
                .replace("<schema>", quotedSchema);
    }

    /** {@link #render} with the outbox insert's trace context columns ({@link #TRACE_COLUMNS}). */
    private static String renderTraced(String template, String quotedSchema) {
        return render(template.replace("<trace_columns>", TRACE_COLUMNS).replace("<trace_values>", TRACE_VALUES)
                .replace("<trace_row_values>", TRACE_ROW_VALUES).replace("<trace_arrays>", TRACE_ARRAYS), quotedSchema);
    }

    private static String renderGeneration(String template, String quotedSchema, int generation) {
        return render(template, quotedSchema).replace("<generation>", Integer.toString(generation));
    }
}

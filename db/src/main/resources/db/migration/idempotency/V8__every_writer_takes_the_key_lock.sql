-- Every writer of the outbox gets the per-key order the relay relies on, not only the executor.
--
-- Per ordering key (tenant, topic, partition key) the relay publishes in id order, and a snapshot that
-- shows a key's later event must show its earlier ones: so per key, id order must be commit order. The
-- executor makes it so by taking an advisory lock on the key, held to commit, before it draws an id (see
-- V3 and V4). Other writers (an INSERT from the application's SQL, a trigger on a business table, a
-- client in another language) drew their id from the column's default without the lock, and a key's
-- events committed out of id order: 1,601 of 18,791 deliveries out of order beside the executor.
-- From here the table takes the lock itself: a BEFORE INSERT trigger takes the key's lock and only then
-- draws the id, for every row a transaction inserts, whoever sends the INSERT.
--
-- Locks: runs in one transaction and changes only the catalog (no row is read or rewritten). Creating
-- the trigger takes SHARE ROW EXCLUSIVE and dropping the default ACCESS EXCLUSIVE on outbox_events and
-- its three generation tables, until commit: the migration waits for transactions that inserted into
-- them and for relay reads under way, and writers and relays wait for it (milliseconds). Writers of
-- earlier versions of the library keep working: their INSERT names no id, and the trigger draws it.

-- The trigger's function. The key's lock is the executor's: the same lock space (ExecutorSql's
-- OUTBOX_LOCK_SPACE, 0x1DE30B0C) and the hash of the same text, tenant || '/' || topic || '/' || partition
-- key (the ordering_hash column's expression; the executor binds the text joined in TransactionOutbox),
-- so a plain INSERT and the executor wait for each other. pg_advisory_xact_lock holds it to the end of
-- the transaction (or of the subtransaction, if that rolls back, with the row); a transaction that holds
-- it already (the executor's completion locks its keys first, in hash order) takes it again at once.
--
-- A row that carries its id and a transaction id other than the inserting one's was copied in with
-- both (a data-only pg_restore; an INSERT ... SELECT of whole rows from another outbox): it keeps its
-- id and takes no lock, because its order was decided where it was written. Logical replication's apply
-- workers fire no ordinary trigger at all. Every other row gets its id here, under the lock, and an id
-- the writer gave is replaced: an id drawn before the lock (by the writer's own nextval, or an ORM's
-- block of pre-allocated ids) is exactly what breaks the order.
--
-- A transaction that inserts events of several keys locks them in the order it inserts them: two that
-- insert the same keys in opposite orders can deadlock (PostgreSQL aborts one; retry it), as with row
-- locks. Insert several keys in one order (sorted), or lock them first as the executor does.
--
-- Each key's lock is an entry in the server's shared lock table until commit, which holds about
-- max_locks_per_transaction x max_connections entries for all sessions together (6,400 by default): a
-- transaction that wrote events of thousands of keys (a backfill, a bulk UPDATE whose trigger writes an
-- event per row) would fill it and fail with "out of shared memory", and so might any other transaction
-- that needs a lock meanwhile. So past 256 rows in one transaction the trigger takes the whole outbox's
-- lock instead (outbox_lock_for_bulk_write(), below) and no more key locks: the transaction's later events
-- are ordered before every other writer's. Taking it then waits for the other writers in flight; one of
-- them waiting for a key this transaction holds makes a deadlock, which PostgreSQL ends by aborting one
-- of the two (retry it). A transaction that knows it writes many keys calls outbox_lock_for_bulk_write()
-- first, and neither waits nor deadlocks.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_events_draw_id() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    rows integer;
BEGIN
    IF NEW.id IS NOT NULL AND NEW.txid <> pg_current_xact_id() THEN
        RETURN NEW;
    END IF;
    IF current_setting('idempotency.outbox_bulk_write', true) IS DISTINCT FROM '${flyway:defaultSchema}' THEN
        -- Rows this transaction inserted so far (a transaction-local setting: gone at commit, undone with
        -- a rolled-back savepoint).
        rows := coalesce(nullif(current_setting('idempotency.outbox_rows_locked', true), ''), '0')::integer + 1;
        IF rows > 256 THEN
            PERFORM "${flyway:defaultSchema}".outbox_lock_for_bulk_write();
        ELSE
            PERFORM set_config('idempotency.outbox_rows_locked', rows::text, true);
            PERFORM pg_advisory_xact_lock(501418764, hashtext(NEW.tenant_id || '/' || NEW.topic || '/' || NEW.partition_key));
        END IF;
    END IF;
    NEW.id := nextval('"${flyway:defaultSchema}".outbox_events_id_seq');
    RETURN NEW;
END
$$;

-- On the partitioned table, so PostgreSQL clones it onto each generation table (an INSERT that names
-- outbox_events_0 directly fires it too) and onto any partition created or attached later. Defaults are
-- filled in before BEFORE triggers run, so NEW.txid is already the inserting transaction's id; the
-- generated ordering_hash is computed after them, which is why the function hashes the key itself.
CREATE TRIGGER outbox_events_draw_id
    BEFORE INSERT ON "${flyway:defaultSchema}".outbox_events
    FOR EACH ROW EXECUTE FUNCTION "${flyway:defaultSchema}".outbox_events_draw_id();

-- The default drew an id before any trigger ran, so before the lock: the trigger draws it instead, and
-- without a default none is drawn and thrown away. The column stays NOT NULL (checked after BEFORE
-- triggers), and the sequence stays owned by it (CACHE 1, see V3), where the relay's schema check
-- finds it (pg_get_serial_sequence). Recurses to the generation tables, which carry the default too.
ALTER TABLE "${flyway:defaultSchema}".outbox_events ALTER COLUMN id DROP DEFAULT;

-- For a transaction that writes events of many keys: locks the whole outbox against every other writer
-- until the transaction ends, so its events are ordered before theirs for every key at once, and the
-- trigger takes no key locks for the rest of the transaction (a transaction-local setting tells it, set
-- only once the lock is held; a rollback to a savepoint from before the call drops both). Call it first,
-- before the transaction inserts any event: called after, it waits for writers that may be waiting for
-- the key locks this transaction holds, and PostgreSQL aborts one of them as a deadlock.
--
-- Locks: SHARE ROW EXCLUSIVE on outbox_events and its generation tables until the transaction ends. It
-- conflicts with the ROW EXCLUSIVE every INSERT takes at its start, before the trigger draws any id: it
-- waits for the transactions that inserted events and are still open, and every later INSERT waits for
-- this transaction. Relays' reads (ACCESS SHARE) go on. The caller needs UPDATE, DELETE or TRUNCATE on
-- outbox_events (or to own it), as LOCK TABLE asks in this mode.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_lock_for_bulk_write() RETURNS void
    LANGUAGE plpgsql
AS $$
BEGIN
    LOCK TABLE "${flyway:defaultSchema}".outbox_events IN SHARE ROW EXCLUSIVE MODE;
    PERFORM set_config('idempotency.outbox_bulk_write', '${flyway:defaultSchema}', true);
END
$$;

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
CREATE FUNCTION "${flyway:defaultSchema}".outbox_events_draw_id() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF NEW.id IS NOT NULL AND NEW.txid <> pg_current_xact_id() THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(501418764, hashtext(NEW.tenant_id || '/' || NEW.topic || '/' || NEW.partition_key));
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

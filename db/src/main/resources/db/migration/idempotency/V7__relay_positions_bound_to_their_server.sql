-- Relay positions bound to the server whose transaction ids they count in.
--
-- A position (V4) is a pair of snapshots of transaction ids, and transaction ids belong to one server's
-- history. A failover to a standby that lagged, a point-in-time restore, or a crash that lost WAL not yet
-- flushed sends the counter back, and the server hands the same ids out again; a dump restored on another
-- server, or a logical-replication cut-over, carries positions (and the txid of events) into another
-- server's count. A position used across such a move calls new events consumed, and they are never
-- published. So:
--  * every partition row names the server its position was written on (system_identifier), and what
--    reads a position (the relays, the sweeper, outbox_event_states) trusts it only on that server;
--  * outbox_relay_server, UNLOGGED, holds a token that the relays check in every read and write of a
--    position: crash recovery empties an unlogged table, a promoted standby and a base backup start with it
--    empty, and the token names the postmaster start and the server it was drawn on, so any restart,
--    crash, failover or restore fails the check. A relay that fails it forgets the positions it held in
--    memory (they may be ahead of the server's history) and reads the stored ones again, which never are:
--    a stored position is durable only with every transaction it saw (WAL is replayed in order).
-- Nothing here is written per event. Runs in one transaction; no table is rewritten.

-- The identifier initdb gave this cluster: kept by physical replicas and base backups, new on any other
-- server a dump or a logical replica lands on. pg_control_system() is executable by every role.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_system_identifier() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT system_identifier FROM pg_catalog.pg_control_system()
$$;

-- Rows that exist now were written on this server (the migration runs where the positions live).
ALTER TABLE "${flyway:defaultSchema}".outbox_relay_partitions
    ADD COLUMN system_identifier bigint NOT NULL DEFAULT "${flyway:defaultSchema}".outbox_system_identifier();

-- One row: the token of this server's current run. Relays draw it when they find none (see RelaySql).
CREATE UNLOGGED TABLE "${flyway:defaultSchema}".outbox_relay_server (
    singleton             boolean     NOT NULL DEFAULT true,
    token                 uuid        NOT NULL DEFAULT gen_random_uuid(),
    system_identifier     bigint      NOT NULL DEFAULT "${flyway:defaultSchema}".outbox_system_identifier(),
    postmaster_started_at timestamptz NOT NULL DEFAULT pg_postmaster_start_time(),
    CONSTRAINT outbox_relay_server_pkey PRIMARY KEY (singleton),
    CONSTRAINT outbox_relay_server_one_row CHECK (singleton)
);

-- This run's token, or NULL when it has none yet: after a crash (the table is empty), a restart (another
-- postmaster start), a failover, a restore or a copy to another server.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_server_token() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT token FROM "${flyway:defaultSchema}".outbox_relay_server
    WHERE system_identifier = "${flyway:defaultSchema}".outbox_system_identifier()
      AND postmaster_started_at = pg_postmaster_start_time()
$$;

-- The gate of every read and write of a relay's positions: true when expected is this run's token, else
-- SQLSTATE IH001, so that no statement reads or writes with positions held from before the move. Used as a
-- one-time filter (it depends on no row), so PostgreSQL checks it before the statement reads anything.
-- It leaves the system identifier to the relays' validation: a row a dump copies to another server names
-- another postmaster start, and a logical replica copies no unlogged table. PL/pgSQL keeps the lookup's
-- plan per session (an index probe of one row); reading pg_control on every call would cost more.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_require_server(expected uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".outbox_relay_server
               WHERE token = expected AND postmaster_started_at = pg_postmaster_start_time()) THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'the PostgreSQL server under the outbox relay changed (a restart, crash recovery, failover or restore)'
        USING ERRCODE = 'IH001',
              HINT = 'The relay reads its positions from the database again; nothing to do.';
END
$$;

-- Each partition's position as this server may trust it: one written on another server counts as
-- nothing consumed ('1:1:' sees no transaction), so its events count as pending, never as published.
-- (Scalar subqueries: PostgreSQL reads pg_control once per query for each, not once per partition.)
CREATE VIEW "${flyway:defaultSchema}".outbox_relay_positions AS
SELECT p.partition_no,
       CASE WHEN p.system_identifier = (SELECT "${flyway:defaultSchema}".outbox_system_identifier())
            THEN p.consumed_snapshot ELSE '1:1:' END AS consumed_snapshot,
       CASE WHEN p.system_identifier = (SELECT "${flyway:defaultSchema}".outbox_system_identifier())
            THEN p.batch_snapshot END AS batch_snapshot,
       CASE WHEN p.system_identifier = (SELECT "${flyway:defaultSchema}".outbox_system_identifier())
            THEN p.batch_cursor END AS batch_cursor
FROM "${flyway:defaultSchema}".outbox_relay_partitions p;

-- Whether an event (its txid and id) is consumed by a position: the consumed snapshot sees its
-- transaction, or the batch under way sees it and has passed its id. The one definition the sweeper, the
-- backlog gauges and outbox_event_states use; a plain SQL expression, which PostgreSQL inlines.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_event_consumed(txid xid8, id bigint, consumed pg_snapshot,
                                                                  batch pg_snapshot, cursor bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(pg_visible_in_snapshot(txid, consumed) OR (pg_visible_in_snapshot(txid, batch) AND id <= cursor), false)
$$;

-- V4's view, now on the positions this server trusts and the one definition of consumed.
CREATE OR REPLACE VIEW "${flyway:defaultSchema}".outbox_event_states AS
SELECT e.id, e.message_id, e.tenant_id, e.topic, e.partition_key, e.created_at,
       CASE WHEN r.status IS NOT NULL THEN r.status
            WHEN "${flyway:defaultSchema}".outbox_event_consumed(e.txid, e.id, p.consumed_snapshot, p.batch_snapshot,
                                                                 p.batch_cursor) THEN 'published'
            ELSE 'pending' END AS status,
       coalesce(r.attempts, 0) AS attempts,
       r.last_error
FROM "${flyway:defaultSchema}".outbox_events e
LEFT JOIN "${flyway:defaultSchema}".outbox_relay_positions p
       ON p.partition_no = (e.ordering_hash & 2147483647)
                           % (SELECT nullif(count(*), 0) FROM "${flyway:defaultSchema}".outbox_relay_partitions)
LEFT JOIN "${flyway:defaultSchema}".outbox_retries r ON r.event_id = e.id
UNION ALL
SELECT r.event_id, r.message_id, r.tenant_id, r.topic, r.partition_key, r.created_at, r.status, r.attempts, r.last_error
FROM "${flyway:defaultSchema}".outbox_retries r
WHERE NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".outbox_events e WHERE e.id = r.event_id);

-- An insert-only outbox, read by committed snapshots (PgQ's way).
--
-- Until V3 the relay marked every event it published (status, published_at), and the sweeper deleted
-- published rows: each event was written twice, left a dead tuple, and its removal was a third write.
-- From here writers only insert, stamped with their transaction id; a relay's progress is a position
-- per virtual partition (two snapshots and an id, written once per batch, fenced by the partition's
-- epoch); an event that fails, and its key's later events, move to outbox_retries; old events go by
-- TRUNCATE of a whole generation table.
--
-- Run it with the relays stopped: it renames and rebuilds the outbox table, so writers wait for it
-- while it copies the pending events. Pending events keep their ids, message ids and order; dead letters
-- move to outbox_retries; published events are not copied (they were done, and only retention kept them).

-- ---- generations --------------------------------------------------------------------------------

-- Which of the three generation tables writers insert into. The sweeper rotates it, PgQ style: it may
-- switch to the next generation only after truncating that table, which it does only when every
-- event in it has been consumed by the relays. Rows that race the switch are never lost: the truncate
-- waits for their inserting transactions, and checks again under its lock (see Sweeper).
CREATE TABLE "${flyway:defaultSchema}".outbox_generation (
    singleton          boolean     NOT NULL DEFAULT true,
    current_generation smallint    NOT NULL,
    rotated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_generation_pkey PRIMARY KEY (singleton),
    CONSTRAINT outbox_generation_one_row CHECK (singleton),
    CONSTRAINT outbox_generation_known CHECK (current_generation BETWEEN 0 AND 2)
);
INSERT INTO "${flyway:defaultSchema}".outbox_generation (current_generation) VALUES (0);

-- The default of outbox_events.generation, so that every writer (the executor, a user's own INSERT)
-- lands in the current generation without naming it. PL/pgSQL keeps the lookup's plan per session.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_current_generation() RETURNS smallint
    LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN (SELECT current_generation FROM "${flyway:defaultSchema}".outbox_generation);
END
$$;

-- ---- the old table steps aside ------------------------------------------------------------------

ALTER TABLE "${flyway:defaultSchema}".outbox_events RENAME TO outbox_events_v3;
ALTER INDEX "${flyway:defaultSchema}".outbox_events_pkey RENAME TO outbox_events_v3_pkey;
-- Its partial indexes (outbox_events_pending, _pending_by_key, _dead) stay until it is dropped: the
-- copy below reads pending and dead rows through them instead of scanning every published row.
ALTER SEQUENCE "${flyway:defaultSchema}".outbox_events_id_seq RENAME TO outbox_events_v3_id_seq;

-- Ids go on from where the old sequence stopped, still one at a time (CACHE 1, see V3): writers of one
-- ordering key draw their ids under an advisory lock held to commit, so per key id order is commit order.
CREATE SEQUENCE "${flyway:defaultSchema}".outbox_events_id_seq AS bigint CACHE 1;
SELECT setval('"${flyway:defaultSchema}".outbox_events_id_seq', s.last_value, s.is_called)
FROM "${flyway:defaultSchema}".outbox_events_v3_id_seq s;

-- ---- the insert-only outbox ---------------------------------------------------------------------

-- Events written by callbacks in the same transaction as their business writes; never updated.
-- txid is the writing transaction's id: a relay's batch is the events whose transaction is visible in
-- its new snapshot and was not in its previous one. Per ordering key the relay publishes in id order.
CREATE TABLE "${flyway:defaultSchema}".outbox_events (
    id             bigint      NOT NULL DEFAULT nextval('"${flyway:defaultSchema}".outbox_events_id_seq'),
    generation     smallint    NOT NULL DEFAULT "${flyway:defaultSchema}".outbox_current_generation(),
    txid           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    -- The id every publisher sends as the message's dedup id (see V3); NULL only for rows written before V3.
    message_id     uuid                 DEFAULT gen_random_uuid(),
    tenant_id      text        NOT NULL,
    topic          text        NOT NULL,
    partition_key  text        NOT NULL,
    -- Stable hash of the ordering key; the relay splits work into virtual partitions by it.
    ordering_hash  integer     NOT NULL GENERATED ALWAYS AS (hashtext(tenant_id || '/' || topic || '/' || partition_key)) STORED,
    payload        jsonb       NOT NULL,
    headers        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_events_pkey PRIMARY KEY (id, generation),
    CONSTRAINT outbox_events_topic_valid
        CHECK (length(topic) <= 255 AND topic ~ '\S' AND topic !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_partition_key_valid
        CHECK (length(partition_key) <= 255 AND partition_key ~ '\S' AND partition_key !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_tenant_valid
        CHECK (length(tenant_id) <= 255 AND tenant_id ~ '\S' AND tenant_id !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_headers_object CHECK (jsonb_typeof(headers) = 'object')
) PARTITION BY LIST (generation);
ALTER SEQUENCE "${flyway:defaultSchema}".outbox_events_id_seq OWNED BY "${flyway:defaultSchema}".outbox_events.id;

CREATE TABLE "${flyway:defaultSchema}".outbox_events_0 PARTITION OF "${flyway:defaultSchema}".outbox_events FOR VALUES IN (0);
CREATE TABLE "${flyway:defaultSchema}".outbox_events_1 PARTITION OF "${flyway:defaultSchema}".outbox_events FOR VALUES IN (1);
CREATE TABLE "${flyway:defaultSchema}".outbox_events_2 PARTITION OF "${flyway:defaultSchema}".outbox_events FOR VALUES IN (2);

-- A batch's first read finds its events by transaction id (the snapshot difference); the primary key's
-- leading id serves the pages after it, and a long-running transaction's late events, in id order.
CREATE INDEX outbox_events_txid ON "${flyway:defaultSchema}".outbox_events (txid);

-- ---- retries and dead letters -------------------------------------------------------------------

-- An event whose attempt failed, and every later event of its key, move here (a copy), so that the
-- relay's position goes on for other keys; the relay retries them in id order per key with backoff,
-- deletes each once published, and marks it dead after too many attempts. Operators list and requeue
-- dead letters here. Rows are written only on this failure path, never for an event published at once.
CREATE TABLE "${flyway:defaultSchema}".outbox_retries (
    event_id        bigint      NOT NULL,
    message_id      uuid,
    tenant_id       text        NOT NULL,
    topic           text        NOT NULL,
    partition_key   text        NOT NULL,
    ordering_hash   integer     NOT NULL,
    payload         jsonb       NOT NULL,
    headers         jsonb       NOT NULL,
    created_at      timestamptz NOT NULL,
    -- pending (waits for its next attempt, or behind its key's earlier event), or dead.
    status          text        NOT NULL DEFAULT 'pending',
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    moved_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_retries_pkey PRIMARY KEY (event_id),
    CONSTRAINT outbox_retries_status_known CHECK (status IN ('pending', 'dead')),
    CONSTRAINT outbox_retries_attempts_non_negative CHECK (attempts >= 0)
);
-- The relay finds, per key, the first pending retry, and whether a key has any (its new events then follow).
CREATE INDEX outbox_retries_pending_by_key ON "${flyway:defaultSchema}".outbox_retries (ordering_hash, event_id)
    WHERE status = 'pending';
CREATE INDEX outbox_retries_dead ON "${flyway:defaultSchema}".outbox_retries (event_id) WHERE status = 'dead';

-- ---- relay positions ----------------------------------------------------------------------------

-- Per virtual partition: every event whose transaction is visible in consumed_snapshot is done; while a
-- batch is under way, so is every event visible in batch_snapshot with id <= batch_cursor. '1:1:' is a
-- snapshot in which nothing is visible: a new partition publishes every event there is.
ALTER TABLE "${flyway:defaultSchema}".outbox_relay_partitions
    ADD COLUMN consumed_snapshot pg_snapshot NOT NULL DEFAULT '1:1:',
    ADD COLUMN batch_snapshot    pg_snapshot,
    ADD COLUMN batch_cursor      bigint,
    ADD CONSTRAINT outbox_relay_partitions_batch_complete CHECK ((batch_snapshot IS NULL) = (batch_cursor IS NULL));

-- ---- pending events and dead letters carry over ------------------------------------------------

-- A key with a failed attempt keeps waiting for its retry: that event and its key's later pending
-- events go to outbox_retries, keeping attempts, backoff and last error; other pending events go to
-- the new table in id order (their txid is this migration's, so the relays publish them first).
-- The keys with a failed attempt are few: joined by hash, never probed per row (a temporary table
-- probed per row made this quadratic in the number of failing keys: 100,000 pending rows took 4 s
-- with 100 of them).
INSERT INTO "${flyway:defaultSchema}".outbox_retries
    (event_id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, headers, created_at,
     status, attempts, next_attempt_at, last_error)
WITH held AS MATERIALIZED (
    SELECT tenant_id, topic, partition_key, min(id) AS first_id
    FROM "${flyway:defaultSchema}".outbox_events_v3
    WHERE status = 'pending' AND attempts > 0
    GROUP BY tenant_id, topic, partition_key)
SELECT e.id, e.message_id, e.tenant_id, e.topic, e.partition_key, e.ordering_hash, e.payload, e.headers, e.created_at,
       e.status, e.attempts, e.next_attempt_at, e.last_error
FROM "${flyway:defaultSchema}".outbox_events_v3 e
JOIN held h ON h.tenant_id = e.tenant_id AND h.topic = e.topic AND h.partition_key = e.partition_key AND e.id >= h.first_id
WHERE e.status = 'pending'
UNION ALL
SELECT e.id, e.message_id, e.tenant_id, e.topic, e.partition_key, e.ordering_hash, e.payload, e.headers, e.created_at,
       e.status, e.attempts, e.next_attempt_at, e.last_error
FROM "${flyway:defaultSchema}".outbox_events_v3 e
WHERE e.status = 'dead'
ORDER BY 1;

INSERT INTO "${flyway:defaultSchema}".outbox_events
    (id, generation, message_id, tenant_id, topic, partition_key, payload, headers, created_at)
SELECT e.id, 0, e.message_id, e.tenant_id, e.topic, e.partition_key, e.payload, e.headers, e.created_at
FROM "${flyway:defaultSchema}".outbox_events_v3 e
WHERE e.status = 'pending'
  AND NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".outbox_retries r WHERE r.event_id = e.id)
ORDER BY e.id;

-- Rows written before V3 keep their NULL message id (they go on being sent under their decimal id);
-- every later row must have one (see V3).
DO $$
BEGIN
    EXECUTE format('ALTER TABLE %I.outbox_events ADD CONSTRAINT outbox_events_message_id_set CHECK (message_id IS NOT NULL OR id <= %s)',
                   '${flyway:defaultSchema}',
                   (SELECT coalesce(max(id), 0) FROM "${flyway:defaultSchema}".outbox_events_v3 WHERE message_id IS NULL));
END
$$;

DROP TABLE "${flyway:defaultSchema}".outbox_events_v3;

-- ---- what operators and tests read --------------------------------------------------------------

-- Each event still in the outbox with its state: 'published' once its partition's position has passed
-- it (and no retry of it is pending), 'pending' before that or while a retry waits, 'dead' when
-- dead-lettered. Retries and dead letters are listed after retention removed their event (they are copies).
CREATE VIEW "${flyway:defaultSchema}".outbox_event_states AS
SELECT e.id, e.message_id, e.tenant_id, e.topic, e.partition_key, e.created_at,
       CASE WHEN r.status IS NOT NULL THEN r.status
            WHEN pg_visible_in_snapshot(e.txid, p.consumed_snapshot)
              OR (pg_visible_in_snapshot(e.txid, p.batch_snapshot) AND e.id <= p.batch_cursor) THEN 'published'
            ELSE 'pending' END AS status,
       coalesce(r.attempts, 0) AS attempts,
       r.last_error
FROM "${flyway:defaultSchema}".outbox_events e
LEFT JOIN "${flyway:defaultSchema}".outbox_relay_partitions p
       ON p.partition_no = (e.ordering_hash & 2147483647)
                           % (SELECT nullif(count(*), 0) FROM "${flyway:defaultSchema}".outbox_relay_partitions)
LEFT JOIN "${flyway:defaultSchema}".outbox_retries r ON r.event_id = e.id
UNION ALL
SELECT r.event_id, r.message_id, r.tenant_id, r.topic, r.partition_key, r.created_at, r.status, r.attempts, r.last_error
FROM "${flyway:defaultSchema}".outbox_retries r
WHERE NOT EXISTS (SELECT 1 FROM "${flyway:defaultSchema}".outbox_events e WHERE e.id = r.event_id);

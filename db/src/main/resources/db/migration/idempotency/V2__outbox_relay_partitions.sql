-- What the outbox relay needs to split the outbox among its instances.
-- An event belongs to virtual partition (ordering_hash & 2147483647) % <partition count>; each
-- partition is leased to one relay instance at a time, so one ordering key has one publisher.

-- One row per virtual partition. A lease is held while owner_id is set and lease_expires_at (database
-- clock) is in the future; every takeover increments epoch, and the relay's writes to outbox_events
-- check (partition, epoch, owner, expiry) in the same statement, which fences a paused old owner.
CREATE TABLE "${flyway:defaultSchema}".outbox_relay_partitions (
    partition_no     integer     NOT NULL,
    owner_id         text,
    epoch            bigint      NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    CONSTRAINT outbox_relay_partitions_pkey PRIMARY KEY (partition_no),
    CONSTRAINT outbox_relay_partitions_no_non_negative CHECK (partition_no >= 0),
    CONSTRAINT outbox_relay_partitions_lease_complete CHECK ((owner_id IS NULL) = (lease_expires_at IS NULL))
);

-- Relay instances that heartbeat; each takes (partitions / live instances, rounded up) partitions.
-- A row whose expires_at has passed belongs to a dead instance and is deleted by the live ones.
CREATE TABLE "${flyway:defaultSchema}".outbox_relay_instances (
    instance_id  text        NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CONSTRAINT outbox_relay_instances_pkey PRIMARY KEY (instance_id)
);

-- The claim walks the ordering hashes that have pending events (one probe per hash, however long
-- its backlog) and reads each chosen key's first pending events in id order.
CREATE INDEX outbox_events_pending_by_key ON "${flyway:defaultSchema}".outbox_events (ordering_hash, id)
    WHERE status = 'pending';

-- Operators list and requeue dead letters in id order.
CREATE INDEX outbox_events_dead ON "${flyway:defaultSchema}".outbox_events (id) WHERE status = 'dead';

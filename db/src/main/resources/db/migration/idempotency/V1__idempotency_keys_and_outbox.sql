-- Idempotency keys and the transactional outbox.
-- The schema is Flyway's default schema: IdempotencyMigrations.migrate(dataSource, schema) sets it,
-- or, when this location is added to your own Flyway, your Flyway's default schema.

-- One row per (tenant, key). In single-transaction mode a row is 'processing' only while its
-- inserting transaction is open; a committed 'processing' row is a lease (work outside the DB).
CREATE TABLE "${flyway:defaultSchema}".idempotency_keys (
    tenant_id           text        NOT NULL,
    idempotency_key     text        NOT NULL,
    status              text        NOT NULL,
    -- SHA-256 of the request; NULL when the caller gave none. A mismatch means the key was reused.
    request_fingerprint bytea,
    -- The callback's result as JSON, and the Java class a replay rebuilds it as (NULL: JSON value).
    result              jsonb,
    result_type         text,
    -- A declared business failure: {"code": ..., "message": ..., "details": {...}}.
    failure             jsonb,
    -- Lease mode: the fencing token of the current holder and when its lease runs out.
    lease_token         bigint,
    lease_expires_at    timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- After this instant (database clock) the key may be reclaimed by a new call, and purged.
    expires_at          timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, idempotency_key),
    CONSTRAINT idempotency_keys_status_known CHECK (status IN ('processing', 'completed', 'failed')),
    CONSTRAINT idempotency_keys_key_valid
        CHECK (length(idempotency_key) <= 255 AND idempotency_key ~ '\S' AND idempotency_key !~ '[[:cntrl:]]'),
    CONSTRAINT idempotency_keys_tenant_valid
        CHECK (length(tenant_id) <= 255 AND tenant_id ~ '\S' AND tenant_id !~ '[[:cntrl:]]'),
    CONSTRAINT idempotency_keys_completed_has_no_failure CHECK (status <> 'completed' OR failure IS NULL),
    CONSTRAINT idempotency_keys_failed_has_failure CHECK (status <> 'failed' OR failure IS NOT NULL),
    CONSTRAINT idempotency_keys_lease_complete CHECK ((lease_token IS NULL) = (lease_expires_at IS NULL))
);

-- The sweeper purges by expiry and fails lapsed leases; both scan these in bounded batches.
CREATE INDEX idempotency_keys_expires_at ON "${flyway:defaultSchema}".idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_lease_expires_at ON "${flyway:defaultSchema}".idempotency_keys (lease_expires_at)
    WHERE status = 'processing';

-- Events written by callbacks in the same transaction as their business writes. The relay
-- publishes 'pending' rows in id order per (tenant_id, topic, partition_key).
CREATE TABLE "${flyway:defaultSchema}".outbox_events (
    id             bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id      text        NOT NULL,
    topic          text        NOT NULL,
    partition_key  text        NOT NULL,
    -- Stable hash of the ordering key; the relay splits work into virtual partitions by it.
    ordering_hash  integer     NOT NULL GENERATED ALWAYS AS (hashtext(tenant_id || '/' || topic || '/' || partition_key)) STORED,
    payload        jsonb       NOT NULL,
    headers        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- pending -> published, or pending -> dead (dead-lettered after too many attempts or a rejection).
    status         text        NOT NULL DEFAULT 'pending',
    attempts       integer     NOT NULL DEFAULT 0,
    -- A retry waits until then (exponential backoff); later events of the same key wait behind it.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error     text,
    published_at   timestamptz,
    CONSTRAINT outbox_events_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_events_status_known CHECK (status IN ('pending', 'published', 'dead')),
    CONSTRAINT outbox_events_published_has_time CHECK ((status = 'published') = (published_at IS NOT NULL)),
    CONSTRAINT outbox_events_topic_valid
        CHECK (length(topic) <= 255 AND topic ~ '\S' AND topic !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_partition_key_valid
        CHECK (length(partition_key) <= 255 AND partition_key ~ '\S' AND partition_key !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_tenant_valid
        CHECK (length(tenant_id) <= 255 AND tenant_id ~ '\S' AND tenant_id !~ '[[:cntrl:]]'),
    CONSTRAINT outbox_events_headers_object CHECK (jsonb_typeof(headers) = 'object'),
    CONSTRAINT outbox_events_attempts_non_negative CHECK (attempts >= 0)
);

-- What the relay scans: only unpublished rows, in id order.
CREATE INDEX outbox_events_pending ON "${flyway:defaultSchema}".outbox_events (id) WHERE status = 'pending';

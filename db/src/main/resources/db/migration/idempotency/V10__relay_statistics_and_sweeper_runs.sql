-- What the relays published and what the sweepers did, in the database (issue 37).
--
-- Since V4 the outbox records no publish time, and several relays and sweepers run side by side on one
-- database, so one process's memory (its Prometheus meters) cannot tell an operator's console, which may run
-- in another process, how fast the outbox goes out or when it was last swept. Two small tables do:
--  * outbox_relay_stats: per relay instance and 10-second bucket of the database's clock, how many events
--    the relay published and how long they took from the writing transaction's start to the broker's
--    acknowledgement (a max, and a histogram of fixed buckets that sums correctly across relays). A relay
--    counts in memory and writes one upsert about every 10 s (never per event or batch), into the bucket
--    that holds the middle of the time it counted, and only when it published something; the sweeper
--    deletes buckets older than 24 hours.
--  * sweeper_runs: one row per sweep, written by the sweeper at its end; each sweep also deletes runs
--    beyond the last 10,000 and those older than 7 days.
-- Neither is read by the relays or the executor: relays and sweepers of this version run on a schema
-- before V10 too, and record nothing there (they log it once at INFO).
--
-- Locks and cost: creates two empty tables and two functions, in one transaction; no existing table is
-- touched, so nothing waits for this migration nor it for anything.

-- The histogram's buckets: the upper bounds, in milliseconds, of all but the last (which holds the rest).
-- The one definition: relays read it when they start, the console reads percentiles with it. Changing it
-- would be a new migration, and buckets written under the old bounds would be read under the new ones.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_relay_latency_bounds() RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY[5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000]::bigint[]
$$;

-- The 10-second bucket a time falls in. The one definition of the width.
CREATE FUNCTION "${flyway:defaultSchema}".outbox_relay_stats_bucket(t timestamptz) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT date_trunc('minute', t) + floor(extract(second FROM t) / 10) * interval '10 seconds'
$$;

-- One row per relay instance and bucket it published in. latency_buckets[i] counts the events of
-- latency up to outbox_relay_latency_bounds()[i] ms (and above the bound before it); its last element,
-- one past the bounds, those above the last bound. The primary key, bucket first, serves the console's
-- reads of the last minutes and the sweeper's delete of old buckets.
CREATE TABLE "${flyway:defaultSchema}".outbox_relay_stats (
    bucket_start    timestamptz NOT NULL,
    instance_id     text        NOT NULL,
    published       bigint      NOT NULL,
    latency_max_ms  bigint      NOT NULL,
    latency_buckets bigint[]    NOT NULL,
    CONSTRAINT outbox_relay_stats_pkey PRIMARY KEY (bucket_start, instance_id)
);

-- One row per sweep: when it ended (database clock), how long it took, what it changed, and its error
-- when it failed (a sweep that fails part way records what it did until then).
CREATE TABLE "${flyway:defaultSchema}".sweeper_runs (
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    sweeper       text        NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    leases_failed bigint      NOT NULL,
    keys_purged   bigint      NOT NULL,
    events_purged bigint      NOT NULL,
    error         text,
    CONSTRAINT sweeper_runs_pkey PRIMARY KEY (id)
);

-- A call's completion rewrites its key row in place (a HOT update): no new entries in the keys table's
-- indexes, and no dead ones left for VACUUM.
--
-- Until now the sweeper found lapsed leases through an index on lease_expires_at limited to
-- status = 'processing'. PostgreSQL counts a column named in an index's predicate as indexed, and an
-- update that changes an indexed column cannot be HOT: every completion (processing -> completed) wrote
-- a new version of the row into the primary key and the expires_at index, and every claim also entered
-- its row into that partial index (with a NULL lease_expires_at). From here the index holds only rows
-- with a lease; settling a lease (completed, or failed by its holder or an operator) clears it
-- (ExecutorSql), so the index holds live leases, leases that ran out, and the unknown outcomes the
-- sweeper recorded, which operators list by it.
--
-- Runs in one transaction. Building the index reads the whole keys table while writers wait (a SHARE
-- lock); on a large table, build it first without blocking them and this migration keeps it:
--   CREATE INDEX CONCURRENTLY idempotency_keys_leases ON <schema>.idempotency_keys (lease_expires_at)
--       WHERE lease_expires_at IS NOT NULL;

-- Settled leases give up their lease columns, as settling does from now on, so the index does not
-- carry them. Unknown outcomes (failure lease_expired) keep theirs. Rows without a lease are not written.
UPDATE "${flyway:defaultSchema}".idempotency_keys
SET lease_token = NULL, lease_expires_at = NULL
WHERE lease_expires_at IS NOT NULL
  AND (status = 'completed' OR (status = 'failed' AND failure ->> 'code' IS DISTINCT FROM 'lease_expired'));

-- The sweeper's scan for lapsed leases (status = 'processing' AND lease_expires_at <= now(), in
-- lease_expires_at order) uses it: the comparison implies the predicate.
CREATE INDEX IF NOT EXISTS idempotency_keys_leases ON "${flyway:defaultSchema}".idempotency_keys (lease_expires_at)
    WHERE lease_expires_at IS NOT NULL;
DROP INDEX "${flyway:defaultSchema}".idempotency_keys_lease_expires_at;

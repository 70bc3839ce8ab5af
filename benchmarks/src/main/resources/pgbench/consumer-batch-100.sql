-- What IdempotentBatchConsumer.consumeAll sends for a batch of 100 new messages whose handler writes one
-- payment each as one JDBC batch: the same statements, in the same order and the same flushes, with the
-- text of idempotency-jdbc's ExecutorSql (CLAIM_BATCH, SEAL_BATCH_CLAIMS_THEN_COMMIT), on a schema
-- with V11, where the claims are stored completed and sealed at commit.
-- Only these differ:
--   * the batch's keys are made in SQL (pgbench binds no arrays): generate_series and a concatenation per
--     key, a little more work for the server than the Java side's bound arrays;
--   * pgbench has no loop: the 100 payment inserts are written out;
--   * pgbench can neither read rows in a pipeline nor bind arrays, so the claim's returned rows (ctids) go to
--     the seal through a transaction-local setting: the claim is wrapped in a WITH that aggregates them into
--     it, and the seal casts that setting where the Java side binds the array it read (its keys rewritten with
--     events, found by key, are none here: empty arrays, as the Java side binds them).
-- Variables set by the program with -D, to the values the Java side binds: tenant, waitbudget, retention.
\set k random(1, 9000000000000000000)
\set a random(1, 100000)
-- the claim (ExecutorSql.CLAIM_BATCH), its BEGIN sent with it as pgjdbc sends it: one flush
\startpipeline
BEGIN;
SELECT set_config('lock_timeout', :waitbudget, true), set_config('idempotency.batch_claims', 'open', true)
FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)
      OFFSET 0) AS saved;
WITH claimed AS (
INSERT INTO <schema>.idempotency_keys (tenant_id, idempotency_key, status, result, result_type, expires_at)
SELECT b.tenant, b.k, 'completed', CAST('true' AS jsonb), 'java.lang.Boolean', now() + make_interval(secs => :retention)
FROM unnest(CAST(array(SELECT CAST(:tenant AS text) FROM generate_series(1, 100)) AS text[]),
            CAST(array(SELECT 'bench-consumer:' || CAST(:k AS text) || '-' || g FROM generate_series(1, 100) AS g) AS text[])) AS b(tenant, k)
ORDER BY b.tenant, b.k
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
RETURNING tenant_id, idempotency_key, ctid)
SELECT set_config('bench.claimed_rows', CAST(array_agg(ctid) AS text), true) FROM claimed;
SELECT set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true);
\endpipeline
-- the handler's JDBC batch (Jdbi's PreparedBatch: pgjdbc's executeBatch, one flush)
\startpipeline
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
\endpipeline
-- SEAL_BATCH_CLAIMS_THEN_COMMIT: the check that the 100 claims are all there, the seal, and our COMMIT, one flush
\startpipeline
SELECT CASE WHEN (SELECT count(*) FROM unnest(CAST(current_setting('bench.claimed_rows') AS tid[])) AS r(row_id)
                  CROSS JOIN LATERAL (SELECT status FROM <schema>.idempotency_keys
                                      WHERE ctid = r.row_id LIMIT 1) AS s
                  WHERE s.status = 'completed')
                 + (SELECT count(*) FROM unnest(CAST('{}' AS text[]), CAST('{}' AS text[])) AS b(tenant, k)
                    CROSS JOIN LATERAL (SELECT ctid AS row_id, * FROM <schema>.idempotency_keys
                                        WHERE tenant_id = b.tenant AND idempotency_key = b.k LIMIT 1) AS s
                    WHERE s.status = 'completed') = 100
             AND current_setting('idempotency.batch_claims', true) = 'open'
            THEN set_config('idempotency.batch_claims', 'sealed', true)
            ELSE current_setting('idempotency.batch_claims_missing_at_commit') END;
COMMIT /* idempotency executor */;
\endpipeline

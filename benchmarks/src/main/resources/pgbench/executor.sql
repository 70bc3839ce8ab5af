-- What PostgresIdempotentExecutor.run(key, tenant, Long.class, callback) sends for a first call whose
-- callback makes one business insert and publishes one outbox event: the same statements, in the same
-- order, with the text of idempotency-jdbc's ExecutorSql. Only these differ, none adding work:
--   * NULL binds (no fingerprint, no lease) are written as NULL literals;
--   * pgjdbc sends the BEGIN, the claim and the savepoint in one execution, with one Sync,
--     and the completion and the COMMIT in another: two pipelines here;
--   * pgbench cannot join strings, so the ordering key is concatenated in SQL; the Java side binds it joined.
-- Variables set by the program with -D, to the values the Java side binds: tenant, waitbudget,
-- retention, lockspace, topic, payload, headers, resulttype.
\set a random(1, 100000)
\set k random(1, 9000000000000000000)
-- KeyClaims.claimThenSavepoint (ExecutorSql.beginThenClaimForCallback): BEGIN, CLAIM_KEY and the callback's
-- savepoint, in one flush (FIND_KEY follows only a claim that inserted nothing: never here)
\startpipeline
-- ExecutorSql.BEGIN
BEGIN;
-- CLAIM_KEY: saves lock_timeout, bounds the wait by the wait budget, inserts, and restores it in RETURNING
INSERT INTO <schema>.idempotency_keys
    (tenant_id, idempotency_key, status, request_fingerprint, lease_token, lease_expires_at, expires_at)
SELECT :tenant, :k, 'processing', NULL,
       NULL, now() + make_interval(secs => NULL),
       now() + make_interval(secs => :retention)
FROM (SELECT set_config('lock_timeout', :waitbudget, true)
      FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)
            OFFSET 0) AS saved
      OFFSET 0) AS bounded
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
RETURNING set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true);
-- CALLBACK_SAVEPOINT, taken after the claimed row and before the callback runs
SAVEPOINT idempotent_callback;
\endpipeline
-- the callback's business insert
INSERT INTO <schema>.payments (tenant_id, amount) VALUES (:tenant, :a);
-- CallbackRunner: COMPLETE_KEY_WITH_ONE_EVENT (the callback emitted one event) and our COMMIT in one execution
-- (ExecutorSql.Completions), one flush: a pipeline here
\startpipeline
-- COMPLETE_KEY_WITH_ONE_EVENT: ordering-key lock, the event (partition key = the amount) and the result; fails
-- unless it updated exactly the claimed row, so that the COMMIT after it commits nothing then
WITH event AS (
    INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload, headers)
    SELECT :tenant, :topic, CAST(:a AS text), CAST(:payload AS jsonb), CAST(:headers AS jsonb)
    WHERE (SELECT count(*)
           FROM (SELECT pg_advisory_xact_lock(:lockspace, hashtext(CAST(:tenant AS text) || '/' || CAST(:topic AS text) || '/' || CAST(:a AS text)))) AS locked) = 1),
completed AS (
    UPDATE <schema>.idempotency_keys
    SET status = 'completed', result = CAST(:a AS jsonb), result_type = :resulttype, updated_at = now(),
        lease_token = NULL, lease_expires_at = NULL
    WHERE tenant_id = :tenant AND idempotency_key = :k
    RETURNING 1)
SELECT CASE WHEN count(*) = 1 THEN 1 ELSE CAST(current_setting('idempotency.completion_found_no_key_row') AS int) END
FROM completed;
-- ExecutorSql.COMMIT
COMMIT;
\endpipeline

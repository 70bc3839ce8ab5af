-- shared/bench/pgbench/executor-fused.sql: the minimal work with the result write and the outbox
-- insert fused into one statement. Adapted to the library's real tables as executor-minimal.sql is, and
-- sent in the same round trips.
\set a random(1, 100000)
\set k random(1, 9000000000000000000)
\startpipeline
BEGIN;
INSERT INTO <schema>.idempotency_keys (tenant_id, idempotency_key, status, request_fingerprint, expires_at) VALUES ('t1', :k, 'processing', '\x00', now() + interval '24 hours') ON CONFLICT DO NOTHING;
\endpipeline
INSERT INTO <schema>.payments (tenant_id, amount) VALUES ('t1', :a);
\startpipeline
WITH done AS (UPDATE <schema>.idempotency_keys SET status = 'completed', result = jsonb_build_object('ok', true, 'id', 1), updated_at = now() WHERE tenant_id = 't1' AND idempotency_key = :k::text) INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', :a, jsonb_build_object('amount', 1));
COMMIT;
\endpipeline

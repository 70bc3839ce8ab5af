-- shared/bench/pgbench/executor.sql, the least SQL the executor's work needs: claim the key, business
-- write, store the result, emit one outbox event. Adapted to the library's real tables only where they
-- demand it: expires_at has no default there, and keys are drawn from a range that does not repeat.
-- Sent in the fewest round trips that work allows: the claim (with the BEGIN) must answer before the
-- business write, which must answer before the result is stored; the rest travels with the COMMIT.
\set a random(1, 100000)
\set k random(1, 9000000000000000000)
\startpipeline
BEGIN;
INSERT INTO <schema>.idempotency_keys (tenant_id, idempotency_key, status, request_fingerprint, expires_at) VALUES ('t1', :k, 'processing', '\x00', now() + interval '24 hours') ON CONFLICT DO NOTHING;
\endpipeline
INSERT INTO <schema>.payments (tenant_id, amount) VALUES ('t1', :a);
\startpipeline
UPDATE <schema>.idempotency_keys SET status = 'completed', result = jsonb_build_object('ok', true, 'id', 1), updated_at = now() WHERE tenant_id = 't1' AND idempotency_key = :k::text;
INSERT INTO <schema>.outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', :a, jsonb_build_object('amount', 1));
COMMIT;
\endpipeline

-- The business write alone, in its own transaction: what a caller pays without idempotency
-- (shared/bench/pgbench/bare.sql on the benchmark's schema). pgbench sends BEGIN as a round trip
-- of its own; pgjdbc sends it together with the INSERT.
\set a random(1, 100000)
BEGIN;
INSERT INTO <schema>.payments (tenant_id, amount) VALUES ('t1', :a);
COMMIT;

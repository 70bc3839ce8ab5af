-- The business write alone, in its own transaction: what a caller pays without idempotency
-- (shared/bench/pgbench/bare.sql on the benchmark's schema). The BEGIN travels with the INSERT, as
-- pgjdbc sends it (pgjdbc as a simple query in the same flush, which PostgreSQL answers on its own).
\set a random(1, 100000)
\startpipeline
BEGIN;
INSERT INTO <schema>.payments (tenant_id, amount) VALUES ('t1', :a);
\endpipeline
COMMIT;

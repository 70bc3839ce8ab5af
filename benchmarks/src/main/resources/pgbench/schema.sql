-- The business table every section writes to, identical to shared/bench/pgbench/schema.sql's
-- payments table. The library's own tables come from its Flyway migrations, applied first to the
-- same schema, so pgbench and the Java side write to the very same tables.
CREATE TABLE <schema>.payments (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  amount bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

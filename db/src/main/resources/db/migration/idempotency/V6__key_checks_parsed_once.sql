-- The keys table refuses the same rows as before, for less work per call.
--
-- PostgreSQL (15, measured) rebuilds a table's CHECK constraints from their stored expression trees for
-- every INSERT and UPDATE statement it runs, and a call runs two on this table (the claim and the
-- completion): parsing its six constraints took 9% of the machine's CPU at 8 callers (perf, pgbench
-- sending the executor's statements). A domain's constraint is parsed once per session (the type
-- cache), so the rule for keys and tenants moves to the domain idempotency_label, and the rules
-- between columns become one shorter table constraint.
--
-- Runs in one transaction and changes only the catalog: the columns keep their base type (text), so
-- the table is not rewritten and its indexes are kept. The new constraints are NOT VALID, so nothing
-- is scanned while the table is locked; every existing row passed the constraints they replace, which
-- refuse the same values, and every new or updated row is checked.
--
-- status stays text: PostgreSQL refuses to run a prepared statement whose result type changed ("cached
-- plan must not change result type"), and every executor of an earlier version reads status back.
-- tenant_id and idempotency_key are read back only by an operator's UnknownOutcomes.list.

CREATE DOMAIN "${flyway:defaultSchema}".idempotency_label AS text;

ALTER TABLE "${flyway:defaultSchema}".idempotency_keys
    ALTER COLUMN tenant_id TYPE "${flyway:defaultSchema}".idempotency_label,
    ALTER COLUMN idempotency_key TYPE "${flyway:defaultSchema}".idempotency_label;

-- Was idempotency_keys_key_valid and idempotency_keys_tenant_valid.
ALTER DOMAIN "${flyway:defaultSchema}".idempotency_label
    ADD CONSTRAINT idempotency_label_valid CHECK (length(VALUE) <= 255 AND VALUE ~ '\S' AND VALUE !~ '[[:cntrl:]]') NOT VALID;

-- Was idempotency_keys_status_known, _completed_has_no_failure, _failed_has_failure and _lease_complete:
-- processing with or without a failure, completed without one, failed with one; a lease has both columns or neither.
ALTER TABLE "${flyway:defaultSchema}".idempotency_keys
    DROP CONSTRAINT idempotency_keys_key_valid,
    DROP CONSTRAINT idempotency_keys_tenant_valid,
    DROP CONSTRAINT idempotency_keys_status_known,
    DROP CONSTRAINT idempotency_keys_completed_has_no_failure,
    DROP CONSTRAINT idempotency_keys_failed_has_failure,
    DROP CONSTRAINT idempotency_keys_lease_complete,
    ADD CONSTRAINT idempotency_keys_row_valid
        CHECK (status IN ('processing', CASE WHEN failure IS NULL THEN 'completed' ELSE 'failed' END)
               AND (lease_token IS NULL) = (lease_expires_at IS NULL)) NOT VALID;

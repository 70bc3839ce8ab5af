-- Trace context across the outbox (issue 36).
--
-- A writer that has a span current when it publishes an event stores that span's W3C context with the
-- row, in the same transaction: traceparent, and tracestate when there is one (the executor does it when
-- tracing is on; another writer, a trigger or another language's client may fill the columns the same
-- way). The relay sends both unchanged in the broker's own headers, so the consumer continues the
-- writer's trace. Rows without them stay valid: NULL means no trace, and the relay sends none.
--
-- No CHECK constraint: one added here would scan every generation under an exclusive lock. Writers check
-- the form, and the relay sends only a well-formed traceparent (and tracestate); it ignores any other,
-- and never fails an event over it. Nothing is rewritten: nullable columns without a default are a
-- change of the catalog only. Each ALTER waits for the transactions writing to its table at that
-- moment, and writers wait for it in turn, a few milliseconds.

ALTER TABLE "${flyway:defaultSchema}".outbox_events
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate  text;

-- A failed event and its key's followers move here (V4) and keep their writer's context, so a retry or
-- a requeued dead letter still carries it.
ALTER TABLE "${flyway:defaultSchema}".outbox_retries
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate  text;

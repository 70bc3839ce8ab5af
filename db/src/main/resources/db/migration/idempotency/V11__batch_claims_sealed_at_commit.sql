-- The batch consumer's claims may be stored completed, because only its own commit can commit them.
--
-- IdempotentBatchConsumer runs a batch of new messages in one transaction: it claims their keys, calls
-- the handler, and commits. Until this version it claimed each key as 'processing' and then updated it
-- to 'completed' before the commit: two writes of every key row, the second a non-HOT update once the
-- claim's pages are full. A consumer's outcome is known before its handler runs (applied, or nothing
-- commits), so the claim can store it at once and skip the update: pgbench sending the statements of a
-- batch of 100 made 1.4 times as many batches per second this way, with the check below included.
--
-- What the 'processing' state still guarded is a handler that commits the transaction itself (through
-- Jdbi, or the raw connection): its claims would be committed as completed before the batch's later
-- messages ran, and a redelivery of those would be taken for a replay and never run. So the claim marks
-- its transaction (the transaction-local setting idempotency.batch_claims = 'open'), every key row
-- inserted while so marked queues the deferred check below, and the consumer's own commit first sets
-- the setting to 'sealed', in the round trip of its COMMIT, after checking that its claims are all
-- there. A COMMIT sent by anybody else finds the setting 'open' and fails: nothing of the transaction is
-- committed, the handler's writes included, and the messages run again when redelivered. The batch's
-- claims that stay 'processing' (a batch run again message by message after a handler failed) are
-- sealed the same way, so a handler's commit is refused there too, where before it committed them as
-- processing. A transaction-local setting goes with a rollback as with a commit, so a handler that
-- rolled back and went on writing cannot have the consumer seal a transaction without its claims.
--
-- Rows inserted otherwise (the executor's claims, a restore) never have the setting 'open' and queue
-- nothing; the WHEN below costs them one setting lookup each. A handler that runs SET CONSTRAINTS ALL
-- IMMEDIATE makes the check run at once, before the seal, and fail: it names its own constraints instead.
--
-- Locks: runs in one transaction and changes only the catalog (no row is read or rewritten). Creating
-- the trigger takes SHARE ROW EXCLUSIVE on idempotency_keys until commit: it waits for the transactions
-- that are writing keys, and they wait for it (milliseconds). Consumers of earlier versions keep working
-- (they claim 'processing' and never mark the setting); consumers of this version on a schema before
-- V11 find no trigger, claim 'processing' and complete as before, and say so once in their log at WARN.
CREATE FUNCTION "${flyway:defaultSchema}".idempotency_keys_require_sealed_claims() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('idempotency.batch_claims', true) IS DISTINCT FROM 'sealed' THEN
        RAISE EXCEPTION 'a batch consumer''s claims were checked before the consumer sealed them: its handler committed the transaction, or ran SET CONSTRAINTS ALL IMMEDIATE; nothing of the transaction was committed'
            USING ERRCODE = 'IH002',
                  HINT = 'Let the batch consumer commit: a handler must not commit, roll back or close its transaction, and names its own constraints in SET CONSTRAINTS, not ALL. Redeliver the messages.';
    END IF;
    RETURN NULL;
END
$$;

-- Deferred to the commit, and checked for each key row inserted while a batch consumer's claims are open.
CREATE CONSTRAINT TRIGGER idempotency_keys_batch_claims_sealed
    AFTER INSERT ON "${flyway:defaultSchema}".idempotency_keys
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (current_setting('idempotency.batch_claims', true) = 'open')
    EXECUTE FUNCTION "${flyway:defaultSchema}".idempotency_keys_require_sealed_claims();

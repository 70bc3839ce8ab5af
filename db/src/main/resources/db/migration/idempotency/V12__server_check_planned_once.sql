-- V12: the relay's server check (V7's outbox_require_server) is planned once per session, whatever the
-- calling statement's settings.
--
-- V7's lookup bound the expected token as a parameter, so PostgreSQL's plan cache chose between a
-- custom and a generic plan by their estimated costs. The relay calls it from reads sent with
-- enable_seqscan off (OutboxPositions) and from writes sent without; when a session's first calls mixed
-- the two, the costs compared made PostgreSQL plan the lookup again at every later call: one planning
-- per read, about a tenth of the relay's backend CPU. The lookup now takes no parameter (the table has
-- one row, V7's singleton) and the token is compared in PL/pgSQL: a query without parameters always
-- keeps its generic plan. Same result and the same error as V7's.
CREATE OR REPLACE FUNCTION "${flyway:defaultSchema}".outbox_require_server(expected uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    current_token uuid;
    started_at timestamp with time zone;
BEGIN
    SELECT token, postmaster_started_at INTO current_token, started_at
    FROM "${flyway:defaultSchema}".outbox_relay_server;
    IF current_token = expected AND started_at = pg_postmaster_start_time() THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'the PostgreSQL server under the outbox relay changed (a restart, crash recovery, failover or restore)'
        USING ERRCODE = 'IH001',
              HINT = 'The relay reads its positions from the database again; nothing to do.';
END
$$;

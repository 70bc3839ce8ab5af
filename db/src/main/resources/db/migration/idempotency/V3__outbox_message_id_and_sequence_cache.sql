-- Message ids that are unique across outboxes, and outbox ids drawn in commit order per key.

-- The id every publisher sends as the message's dedup id, and consumers key on. A bigint outbox id
-- collides between two services, two schemas or a rebuilt database publishing into one stream (the
-- broker then drops the second event as a duplicate); a random UUID, fixed when the event is
-- written, does not. The database draws it, so every writer of the table (the executor, a user's
-- own INSERT) gets one without binding anything.
-- Rows written before this migration keep NULL and go on being sent under their decimal id, the
-- message id they had: one of them may already have reached a broker or consumer under that id
-- (an attempt that timed out, a relay that stopped between the ack and the mark), and a new id
-- would make it a new message. Every later row must have one: the check exempts only ids up to
-- the highest existing one (it applies to updates too, so a plain NOT NULL check would stop the
-- relay from marking the older rows). The column without a default and the check as NOT VALID
-- change only the catalog: no table rewrite and no scan while the table is locked.
ALTER TABLE "${flyway:defaultSchema}".outbox_events ADD COLUMN message_id uuid;
ALTER TABLE "${flyway:defaultSchema}".outbox_events ALTER COLUMN message_id SET DEFAULT gen_random_uuid();
DO $$
BEGIN
    EXECUTE format('ALTER TABLE %I.outbox_events ADD CONSTRAINT outbox_events_message_id_set CHECK (message_id IS NOT NULL OR id <= %s) NOT VALID',
                   '${flyway:defaultSchema}',
                   (SELECT coalesce(max(id), 0) FROM "${flyway:defaultSchema}".outbox_events));
END
$$;

-- Per ordering key the relay publishes in id order, and writers of one key draw their ids under an
-- advisory lock held to commit. That makes id order commit order only while every session takes
-- each id from the sequence itself: with CACHE n > 1 each session pre-allocates a block of n ids,
-- and three commits of one key can get 4, 24, 5. The relay refuses to start on a cache other than 1.
ALTER TABLE "${flyway:defaultSchema}".outbox_events ALTER COLUMN id SET CACHE 1;

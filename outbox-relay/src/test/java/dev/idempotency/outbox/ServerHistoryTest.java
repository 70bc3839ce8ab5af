package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a relay does when the stored positions or events do not belong to the server it is connected
 * to (V7), on one real database: positions written on another server, and events stamped with
 * transaction ids this server has not reached, are rebased so that every event still in the outbox is
 * published again; a server that changed under a running relay (its token gone, as after a crash) makes
 * it read its positions again; an id sequence behind the outbox's rows is refused with the fix. The
 * moves themselves (failover, restore, dump, logical replica) are fault-tests' HistoryMovesTest.
 */
@Timeout(60)
class ServerHistoryTest {

    @Test
    void positionsWrittenOnAnotherServerAreRebasedAndEveryEventStillInTheOutboxIsPublishedAgainInIdOrder() {
        try (OutboxFixture outbox = OutboxFixture.create("history_foreign")) {
            List<Long> ids = outbox.insertMany("t", "orders", "k", 5);
            PublicationLog log = new PublicationLog();
            runUntilPublished(outbox, log, "first", ids);
            // As a dump restored on another cluster, or a logical replica, carries them.
            outbox.execute("UPDATE outbox_relay_partitions SET system_identifier = system_identifier + 1");
            assertEquals(5, outbox.count("status = 'pending'"), "another server's positions consume nothing here");

            runUntilPublished(outbox, log, "second", ids);

            ids.forEach(id -> assertEquals(2, log.publicationCount(id), "event " + id + " published again"));
            assertEquals(List.of(), log.keysOutOfOrder());
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_partitions"
                    + " WHERE system_identifier <> outbox_system_identifier()"), "the positions now count on this server");
        }
    }

    @Test
    void eventsStampedWithTransactionIdsThisServerHasNotReachedArePublishedAtOnce() {
        try (OutboxFixture outbox = OutboxFixture.create("history_ahead")) {
            long before = outbox.insert("t", "orders", "k", "{}");
            // A row copied from a server whose counter is far ahead: invisible here for a million transactions.
            outbox.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, txid)"
                    + " VALUES ('t', 'orders', 'k', '{}', (pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
                    + " + 1000000)::text::xid8)");
            long copied = outbox.number("SELECT max(id) FROM outbox_events");

            runUntilPublished(outbox, new PublicationLog(), "r", List.of(before, copied));

            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_events"
                    + " WHERE txid >= pg_snapshot_xmax(pg_current_snapshot())"));
        }
    }

    @Test
    void aRunningRelayWhoseServerChangedReadsItsPositionsAgainAndPublishesWhatComesAfter() throws Exception {
        try (OutboxFixture outbox = OutboxFixture.create("history_token")) {
            PublicationLog log = new PublicationLog();
            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", log))
                    .config(outbox.config("r").build()).build()) {
                relay.start();
                List<Long> first = outbox.insertMany("t", "orders", "k", 3);
                outbox.awaitStatus(first, "published", Duration.ofSeconds(10));
                String token = outbox.string("SELECT outbox_server_token()::text");
                // What crash recovery does to the unlogged table: the token of the server's run is gone.
                outbox.execute("DELETE FROM outbox_relay_server");

                List<Long> second = outbox.insertMany("t", "orders", "k", 3);
                outbox.awaitStatus(second, "published", Duration.ofSeconds(10));

                assertTrue(!token.equals(outbox.string("SELECT outbox_server_token()::text")), "a new token was drawn");
                assertEquals(List.of(), log.keysOutOfOrder());
            }
        }
    }

    @Test
    void aRelayRefusesAnOutboxWhoseIdsRunAheadOfTheirSequenceAndNamesTheSetvalThatFixesIt() throws Exception {
        try (OutboxFixture outbox = OutboxFixture.create("history_sequence")) {
            List<Long> ids = outbox.insertMany("t", "orders", "k", 3);
            // A logical replica copies rows but not sequences.
            outbox.execute("SELECT setval('outbox_events_id_seq', 1, false)");
            String sequence = outbox.schema() + ".outbox_events_id_seq";

            OutboxSchemaException refused = assertThrows(OutboxSchemaException.class,
                    () -> OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("behind").build()).build().start());

            assertEquals("outbox relay behind stopped: \"" + outbox.schema() + "\".outbox_events holds id " + ids.get(2)
                    + ", above the last id its sequence " + sequence + " handed out (none; a logical replica copies rows but"
                    + " not sequences), so new events would get lower ids than older events of their keys; fix: SELECT"
                    + " setval('" + sequence + "', " + ids.get(2) + ")", refused.getMessage());
            outbox.execute("SELECT setval('" + sequence + "', " + ids.get(2) + ")");
            runUntilPublished(outbox, new PublicationLog(), "fixed", ids);
        }
    }

    private static void runUntilPublished(OutboxFixture outbox, PublicationLog log, String instance, List<Long> ids) {
        try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher(instance, log))
                .config(outbox.config(instance).build()).build()) {
            relay.start();
            outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
            ids.forEach(id -> assertTrue(log.publicationCount(id) > 0, "event " + id + " reached the publisher"));
        }
    }
}

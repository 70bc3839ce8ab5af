package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.testing.LockWaits;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * Outbox retention by generation rotation (V4): the sweeper truncates the next of the three
 * generation tables only when every event in it was consumed, never loses a row a writer is still
 * inserting, keeps each event at least the retention, and leaves retries and dead letters alone.
 * Relays are stood in for by setting their positions (consumed_snapshot) directly.
 */
@Timeout(60)
class SweeperRetentionTest {
    private static final Duration RETENTION = Duration.ofHours(1);

    @RegisterExtension
    final ExecutorFixture db = new ExecutorFixture(4);

    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    private final Logger rotationLog = (Logger) LoggerFactory.getLogger(GenerationRotation.class);

    @BeforeEach
    void captureLog() {
        logged.start();
        rotationLog.addAppender(logged);
    }

    @AfterEach
    void releaseLog() {
        rotationLog.detachAppender(logged);
    }

    private Sweeper sweeper() {
        return Sweeper.builder(db.schema.dataSource()).schema(db.schema.name()).publishedEventRetention(RETENTION).build();
    }

    @Test
    void aDueRotationTruncatesTheNextGenerationOnceEveryEventInItIsConsumedAndWritersMoveToIt() {
        db.insertEvents(1, 5);
        db.insertEvents(0, 3);
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("31 minutes");

        Sweeper.Result result = sweeper().sweepOnce();

        assertEquals(5, result.eventsPurged());
        assertEquals(1, db.currentGeneration());
        assertEquals(0, db.eventsIn(1));
        assertEquals(3, db.eventsIn(0), "the generation writers just left stays");
        db.schema.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'new', '{}')");
        assertEquals(1, db.eventsIn(1), "a writer that names no generation lands in the new current one");
        assertEquals(List.of(), warnings());
    }

    @Test
    void noRotationBeforeHalfTheRetentionHasPassedSinceTheLastOne() {
        db.insertEvents(1, 5);
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("29 minutes");

        assertEquals(0, sweeper().sweepOnce().eventsPurged());

        assertEquals(0, db.currentGeneration());
        assertEquals(5, db.eventsIn(1));
    }

    @Test
    void eachEventIsKeptAtLeastTheRetentionThatIsTwoRotationsAfterWritersLeftItsGeneration() {
        db.insertEvents(0, 3);
        db.relaysConsumedEverything(4);
        Sweeper sweeper = sweeper();

        db.lastRotatedAgo("31 minutes");
        assertEquals(0, sweeper.sweepOnce().eventsPurged());
        assertEquals(0, sweeper.sweepOnce().eventsPurged(), "the rotation just made is not half a retention old");
        assertEquals(1, db.currentGeneration());
        db.lastRotatedAgo("31 minutes");
        assertEquals(0, sweeper.sweepOnce().eventsPurged());
        assertEquals(2, db.currentGeneration());
        assertEquals(3, db.eventsIn(0), "still there a whole retention after writers left generation 0");

        db.lastRotatedAgo("31 minutes");
        assertEquals(3, sweeper.sweepOnce().eventsPurged());
        assertEquals(0, db.currentGeneration());
        assertEquals(0, db.eventsIn(0));
    }

    @Test
    void noRotationWhileNoRelayEverConsumedTheNextGenerationAndAWarningSaysHowManyWait() {
        db.insertEvents(1, 4);
        db.lastRotatedAgo("31 minutes");

        assertEquals(0, sweeper().sweepOnce().eventsPurged());

        assertEquals(0, db.currentGeneration(), "writers stay on the current generation");
        assertEquals(4, db.eventsIn(1));
        List<String> warnings = warnings();
        assertEquals(1, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains("4 events in outbox_events_1 are not consumed yet"), warnings.get(0));
    }

    @Test
    void noRotationWhileOnePartitionIsBehindEvenIfAllOthersConsumedEverything() {
        db.insertEvents(1, 40);
        db.relaysConsumedEverything(4);
        db.schema.execute("UPDATE outbox_relay_partitions SET consumed_snapshot = '1:1:' WHERE partition_no = 2");
        long behind = count("SELECT count(*) FROM outbox_events_1 WHERE " + ExecutorSql.partitionOf("ordering_hash", "4") + " = 2");
        assertTrue(behind > 0, "some of the 40 keys hash to partition 2");
        db.lastRotatedAgo("31 minutes");

        assertEquals(0, sweeper().sweepOnce().eventsPurged());

        assertEquals(0, db.currentGeneration());
        assertEquals(40, db.eventsIn(1));
        assertTrue(warnings().get(0).contains(behind + " events in outbox_events_1"), warnings().toString());
    }

    @Test
    void noRotationOnPositionsWrittenOnAnotherServerThoughTheyCallEveryEventConsumed() {
        db.insertEvents(1, 6);
        db.relaysConsumedEverything(4);
        // As a dump restored here, or a logical replica, carries them: another cluster's transaction ids.
        db.schema.execute("UPDATE outbox_relay_partitions SET system_identifier = system_identifier + 1 WHERE partition_no = 1");
        long foreign = count("SELECT count(*) FROM outbox_events_1 WHERE " + ExecutorSql.partitionOf("ordering_hash", "4") + " = 1");
        assertTrue(foreign > 0, "some of the 6 keys hash to partition 1");
        db.lastRotatedAgo("31 minutes");

        assertEquals(0, sweeper().sweepOnce().eventsPurged());

        assertEquals(6, db.eventsIn(1), "no event consumed only by another server's position is removed");
        assertEquals(foreign, count("SELECT count(*) FROM outbox_event_states WHERE status = 'pending'"));
        assertTrue(warnings().get(0).contains(foreign + " events in outbox_events_1"), warnings().toString());
    }

    @Test
    void aBatchUnderWayCountsAsConsumedOnlyUpToItsCursor() {
        db.insertEvents(1, 10);
        db.relaysConsumedEverything(1);
        long lastId = count("SELECT max(id) FROM outbox_events_1");
        // The relay took its batch's snapshot after these events but had not passed the last one yet.
        db.schema.execute("UPDATE outbox_relay_partitions SET batch_snapshot = consumed_snapshot, batch_cursor = " + (lastId - 1)
                + ", consumed_snapshot = '1:1:'");
        db.lastRotatedAgo("31 minutes");

        assertEquals(0, sweeper().sweepOnce().eventsPurged());
        assertTrue(warnings().get(0).contains("1 events in outbox_events_1"), warnings().toString());

        db.schema.execute("UPDATE outbox_relay_partitions SET batch_cursor = " + lastId);
        assertEquals(10, sweeper().sweepOnce().eventsPurged());
    }

    @Test
    void aWriterStillOpenInTheNextGenerationMakesTheRotationGiveUpAfterItsLockTimeoutAndItsRowSurvives() throws Exception {
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("31 minutes");
        try (Handle writer = db.jdbi.open()) {
            writer.begin();
            insertStraggler(writer);

            assertEquals(0, sweeper().sweepOnce().eventsPurged());

            assertEquals(0, db.currentGeneration());
            assertTrue(warnings().get(0).contains("could not lock the next generation table"), warnings().toString());
            writer.commit();
        }
        assertEquals(1, db.eventsIn(1), "the straggler's row is there");
        assertEquals(0, sweeper().sweepOnce().eventsPurged(), "not consumed yet, so still not truncated");
        assertEquals(1, db.eventsIn(1));

        db.relaysConsumedEverything(4);
        assertEquals(1, sweeper().sweepOnce().eventsPurged());
    }

    @Test
    void aWriterThatCommitsWhileTheRotationWaitsForItsLockIsCheckedUnderTheLockAndItsRowSurvives() throws Exception {
        db.insertEvents(1, 3);
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("31 minutes");
        CompletableFuture<Sweeper.Result> sweep;
        try (Handle writer = db.jdbi.open()) {
            writer.begin();
            insertStraggler(writer);
            sweep = CompletableFuture.supplyAsync(() -> sweeper().sweepOnce());
            // The sweeper counted generation 1 (the straggler's row was invisible to it) and queued for its lock.
            LockWaits.awaitTable(db.schema.dataSource(), db.schema.name() + ".outbox_events_1", 1);
            writer.commit();
        }

        assertEquals(0, sweep.get(30, TimeUnit.SECONDS).eventsPurged());

        assertEquals(0, db.currentGeneration());
        assertEquals(4, db.eventsIn(1), "the three consumed events and the straggler's are all there");
        assertTrue(warnings().get(0).contains("1 events in outbox_events_1 are not consumed yet"), warnings().toString());
    }

    @Test
    void aWriterOpenInTheCurrentGenerationDoesNotHoldUpTheRotation() {
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("31 minutes");
        try (Handle writer = db.jdbi.open()) {
            writer.begin();
            writer.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'open', '{}')");

            sweeper().sweepOnce();

            assertEquals(1, db.currentGeneration());
            writer.commit();
        }
        assertEquals(1, db.eventsIn(0));
        assertEquals(List.of(), warnings());
    }

    @Test
    void retriesAndDeadLettersSurviveTheRotationThatRemovesTheirEvents() {
        db.insertEvents(1, 3);
        db.relaysConsumedEverything(4);
        db.schema.execute("INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, "
                + "headers, created_at, status, attempts, last_error) "
                + "SELECT id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, headers, created_at, "
                + "CASE WHEN partition_key = 'p1' THEN 'dead' ELSE 'pending' END, 3, 'HTTP 503' "
                + "FROM outbox_events_1 WHERE partition_key IN ('p1', 'p2')");
        db.lastRotatedAgo("31 minutes");

        assertEquals(3, sweeper().sweepOnce().eventsPurged());

        assertEquals(0, db.eventsIn(1));
        List<Map<String, Object>> states = db.jdbi.withHandle(h -> h.createQuery(
                "SELECT partition_key, status, attempts, last_error FROM outbox_event_states ORDER BY partition_key").mapToMap().list());
        assertEquals(List.of(
                Map.of("partition_key", "p1", "status", "dead", "attempts", 3, "last_error", "HTTP 503"),
                Map.of("partition_key", "p2", "status", "pending", "attempts", 3, "last_error", "HTTP 503")), states);
    }

    @Test
    void twoSweepersSideBySideRotateOnceBetweenThem() throws Exception {
        db.insertEvents(1, 100);
        db.relaysConsumedEverything(4);
        db.lastRotatedAgo("31 minutes");
        Sweeper first = sweeper();
        Sweeper second = sweeper();

        CompletableFuture<Sweeper.Result> a = CompletableFuture.supplyAsync(first::sweepOnce);
        CompletableFuture<Sweeper.Result> b = CompletableFuture.supplyAsync(second::sweepOnce);

        assertEquals(100, a.get(30, TimeUnit.SECONDS).eventsPurged() + b.get(30, TimeUnit.SECONDS).eventsPurged());
        assertEquals(1, db.currentGeneration());
    }

    /** A writer whose snapshot still read an old generation value: it inserts into generation 1 while 0 is current. */
    private static void insertStraggler(Handle writer) {
        writer.execute("INSERT INTO outbox_events (generation, tenant_id, topic, partition_key, payload) "
                + "VALUES (1, 't1', 'payments', 'straggler', '{}')");
    }

    private List<String> warnings() {
        return logged.list.stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
    }

    private long count(String sql) {
        return db.jdbi.withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a relay records in outbox_relay_stats (V10) for the console: every event it published, counted
 * once, with its commit-to-publish latency in the histogram; and that on a schema before V10 it publishes
 * as before.
 */
@Timeout(60)
class RelayStatsTest {
    @Test
    void aRelayRecordsEachEventItPublishedOnceWithItsLatencyInTheHistogram() {
        try (OutboxFixture outbox = OutboxFixture.create("stats")) {
            List<Long> ids = new ArrayList<>();
            for (int key = 0; key < 25; key++) {
                ids.addAll(outbox.insertMany("t", "orders", "k" + key, 10));
            }
            outbox.execute("UPDATE outbox_events SET created_at = created_at - interval '2 seconds' WHERE partition_key = 'k0'");
            RecordingPublisher publisher = new RecordingPublisher("r", new PublicationLog());

            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), publisher)
                    .config(outbox.config("counting").build()).build()) {
                relay.start();
                outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
            }

            assertEquals(250, outbox.number("SELECT sum(published) FROM outbox_relay_stats WHERE instance_id = 'counting'"));
            assertEquals(250, outbox.number("SELECT sum(n) FROM outbox_relay_stats, unnest(latency_buckets) AS n"),
                    "each event in one bucket of the histogram");
            assertEquals(15, outbox.number("SELECT max(cardinality(latency_buckets)) FROM outbox_relay_stats"),
                    "one element per bound and one past them");
            assertTrue(outbox.number("SELECT max(latency_max_ms) FROM outbox_relay_stats") >= 2000,
                    "the events written 2 s earlier are the max");
            assertTrue(outbox.number("SELECT sum(n) FROM outbox_relay_stats, unnest(latency_buckets) WITH ORDINALITY AS h(n, i)"
                    + " WHERE i > 8") >= 10, "those 10 events are in the buckets above 1 s");
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_stats"
                    + " WHERE bucket_start <> outbox_relay_stats_bucket(bucket_start)"), "buckets start at 10 s marks");
        }
    }

    @Test
    void aRelayOnASchemaBeforeV10PublishesAndRecordsNothing() {
        try (OutboxFixture outbox = OutboxFixture.createAtVersion("stats_v9", "9")) {
            List<Long> ids = outbox.insertMany("t", "orders", "k", 5);
            RecordingPublisher publisher = new RecordingPublisher("r", new PublicationLog());

            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), publisher)
                    .config(outbox.config("v9").build()).build()) {
                relay.start();
                outbox.awaitStatus(ids, "published", Duration.ofSeconds(20));
            }

            assertEquals(0, outbox.number("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                    + " AND tablename = 'outbox_relay_stats'"), "V10 not applied");
        }
    }
}

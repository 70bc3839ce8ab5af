package dev.idempotency.console;

import static dev.idempotency.console.ConsoleRequests.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.testing.MigratedSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The overview's history from V10's tables: events published per second and commit-to-publish latency summed
 * over the relays' rows, the sweeper's runs; and a schema before V10, which shows neither.
 */
@Timeout(60)
class ConsoleHistoryTest {
    @RegisterExtension
    final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    @Test
    void theChartsDataSumsTheRelaysPublishedEventsAndReadsPercentilesFromTheirSummedHistograms() throws Exception {
        // Two relays in this minute: 150 events up to 10 ms, 48 up to 250 ms, 2 up to 1 s, at most 900 ms.
        db.execute("INSERT INTO outbox_relay_stats (bucket_start, instance_id, published, latency_max_ms, latency_buckets)"
                + " VALUES (outbox_relay_stats_bucket(now()), 'relay-a', 100, 40, '{0,100,0,0,0,0,0,0,0,0,0,0,0,0,0}'),"
                + " (outbox_relay_stats_bucket(now()), 'relay-b', 100, 900, '{50,0,0,0,0,48,0,2,0,0,0,0,0,0,0}'),"
                + " (outbox_relay_stats_bucket(now() - interval '1 hour'), 'relay-a', 6000, 1, '{6000,0,0,0,0,0,0,0,0,0,0,0,0,0,0}')");
        OutboxConsole console = OutboxConsole.builder(db.dataSource()).schema(db.name()).build();

        JsonNode rates = new ObjectMapper().readTree(get(console, "/overview/rates.json").text());

        int now = rates.get("time").size() - 1;
        assertEquals(15, rates.get("time").size());
        assertEquals(3.33, rates.get("published").get(now).asDouble(), "200 events in the minute, per second");
        assertEquals(10, rates.get("p50").get(now).asLong(), "the 100th of 200 is in the bucket up to 10 ms");
        assertEquals(250, rates.get("p99").get(now).asLong(), "the 198th is in the bucket up to 250 ms");
        assertEquals(900, rates.get("max").get(now).asLong());
        assertEquals(0, rates.get("published").get(0).asDouble(), "no relay published then; the hour-old row is outside");
        assertTrue(rates.get("p50").get(0).isNull(), "no latency without events");
    }

    @Test
    void theOverviewListsTheSweepersLastRunsNewestFirstWithTheirErrorsEscaped() {
        db.execute("INSERT INTO sweeper_runs (sweeper, started_at, finished_at, leases_failed, keys_purged, events_purged,"
                + " error) VALUES ('7@ops-host', now() - interval '1 minute', now() - interval '1 minute', 0, 0, 0,"
                + " 'SchemaNotMigratedException: <missing>')");
        db.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at)"
                + " SELECT 't1', 'k' || g, 'completed', '1', now() - interval '1 minute' FROM generate_series(1, 3) g");
        Sweeper.Result swept = Sweeper.builder(db.dataSource()).schema(db.name()).build().sweepOnce();
        OutboxConsole console = OutboxConsole.builder(db.dataSource()).schema(db.name()).build();

        String overview = get(console, "/").text();

        String sweeps = overview.substring(overview.indexOf("<table id=\"sweeps\">"));
        String newest = sweeps.substring(sweeps.indexOf("<tr><td>", sweeps.indexOf("<tbody>")), sweeps.indexOf("</tr>",
                sweeps.indexOf("<tbody>")));
        assertEquals(3, swept.keysPurged());
        assertTrue(newest.contains("</td><td>0</td><td>3</td><td>0</td><td></td>"), newest);
        assertTrue(sweeps.contains("7@ops-host") && sweeps.contains("SchemaNotMigratedException: &lt;missing&gt;"), sweeps);
        assertTrue(sweeps.indexOf("7@ops-host") > sweeps.indexOf(newest), "newest first");
        assertTrue(overview.contains("<div id=\"latency\" class=\"chart\""), overview);
    }

    @Test
    void onASchemaBeforeV10TheOverviewSaysWhatItLacksAndItsChartHasNoPublishedSeries() throws Exception {
        try (MigratedSchema v9 = MigratedSchema.builder((dataSource, schema) ->
                IdempotencyMigrations.migrate(dataSource, schema, "9")).prefix("console_v9").build().start()) {
            OutboxConsole console = OutboxConsole.builder(v9.dataSource()).schema(v9.name()).build();

            String overview = get(console, "/").text();
            JsonNode rates = new ObjectMapper().readTree(get(console, "/overview/rates.json").text());

            assertTrue(overview.contains("This schema predates migration V10: sweeps are not recorded"), overview);
            assertFalse(overview.contains("id=\"sweeps\""), overview);
            assertTrue(rates.get("published").get(0).isNull(), rates.toString());
            assertEquals(0, rates.get("written").get(0).asDouble());
        }
    }
}

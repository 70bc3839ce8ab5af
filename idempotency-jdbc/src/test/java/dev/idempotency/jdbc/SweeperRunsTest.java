package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What a sweep records in sweeper_runs (V10), what it keeps of it and of outbox_relay_stats, and a schema before V10. */
@Timeout(60)
class SweeperRunsTest {
    @RegisterExtension
    final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).poolSize(2).build();

    @Test
    void eachSweepIsRecordedWithTheNumbersItReturned() {
        db.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at)"
                + " SELECT 't1', 'k' || g, 'completed', '1', now() - interval '1 minute' FROM generate_series(1, 7) g");
        db.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, lease_token, lease_expires_at, expires_at)"
                + " VALUES ('t1', 'leased', 'processing', 1, now() - interval '1 second', now() + interval '1 hour')");
        Sweeper sweeper = Sweeper.builder(db.dataSource()).schema(db.name()).build();

        Sweeper.Result result = sweeper.sweepOnce();

        Map<String, Object> run = jdbi().withHandle(h -> h.createQuery("SELECT sweeper, leases_failed, keys_purged,"
                + " events_purged, error, finished_at >= started_at AND finished_at <= now() AS timed FROM sweeper_runs")
                .mapToMap().one());
        assertEquals(new Sweeper.Result(1, 7, 0), result);
        assertEquals(1L, run.get("leases_failed"));
        assertEquals(7L, run.get("keys_purged"));
        assertEquals(0L, run.get("events_purged"));
        assertNull(run.get("error"));
        assertEquals(true, run.get("timed"));
        assertTrue(((String) run.get("sweeper")).contains("@"), "pid@host: " + run.get("sweeper"));
    }

    @Test
    void aSweepKeepsTheLastTenThousandRunsAndOneDayOfRelayStatistics() {
        db.execute("INSERT INTO sweeper_runs (sweeper, started_at, finished_at, leases_failed, keys_purged, events_purged)"
                + " SELECT 'old', now(), now(), 0, 0, 0 FROM generate_series(1, 10005)");
        db.execute("INSERT INTO sweeper_runs (sweeper, started_at, finished_at, leases_failed, keys_purged, events_purged)"
                + " VALUES ('week', now() - interval '8 days', now() - interval '8 days', 0, 0, 0)");
        db.execute("INSERT INTO outbox_relay_stats (bucket_start, instance_id, published, latency_max_ms, latency_buckets)"
                + " VALUES (outbox_relay_stats_bucket(now() - interval '25 hours'), 'r', 1, 1, '{1}'),"
                + " (outbox_relay_stats_bucket(now() - interval '23 hours'), 'r', 2, 1, '{2}')");

        Sweeper.builder(db.dataSource()).schema(db.name()).build().sweepOnce();

        assertEquals(9_999, count("SELECT count(*) FROM sweeper_runs"), "the last 10,000 but the one of 8 days ago");
        assertEquals(0, count("SELECT count(*) FROM sweeper_runs WHERE sweeper = 'week'"));
        assertEquals(1, count("SELECT count(*) FROM sweeper_runs WHERE sweeper <> 'old'"), "the new run stays");
        assertEquals(2, count("SELECT sum(published) FROM outbox_relay_stats"), "the bucket of 25 hours ago is gone");
    }

    @Test
    void aFailedSweepIsRecordedWithItsError() {
        db.execute("DROP TABLE idempotency_keys");
        Sweeper sweeper = Sweeper.builder(db.dataSource()).schema(db.name()).build();

        assertThrows(SchemaNotMigratedException.class, sweeper::sweepOnce);

        String error = jdbi().withHandle(h -> h.createQuery("SELECT error FROM sweeper_runs").mapTo(String.class).one());
        assertTrue(error.startsWith("SchemaNotMigratedException: ") && error.contains("idempotency_keys"), error);
    }

    @Test
    void aSweeperOnASchemaBeforeV10SweepsAndRecordsNothing() {
        try (MigratedSchema v9 = MigratedSchema.builder((dataSource, schema) ->
                IdempotencyMigrations.migrate(dataSource, schema, "9")).prefix("sweep_v9").poolSize(2).build().start()) {
            v9.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at)"
                    + " VALUES ('t1', 'k', 'completed', '1', now() - interval '1 minute')");
            Sweeper sweeper = Sweeper.builder(v9.dataSource()).schema(v9.name()).build();

            assertEquals(1, sweeper.sweepOnce().keysPurged());
            assertEquals(0, sweeper.sweepOnce().keysPurged());
        }
    }

    private Jdbi jdbi() {
        return Jdbi.create(db.dataSource());
    }

    private long count(String sql) {
        return jdbi().withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

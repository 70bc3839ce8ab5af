package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.LockWaits;
import dev.idempotency.testing.MigratedSchema;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An executor running while V4 is applied to its V3 outbox: the migration waits for a writer still
 * open, writers that come meanwhile wait for the migration, and every event lands, the earlier ones
 * carried over and the later ones in the new table with their own transaction id, with no restart.
 */
@Timeout(60)
class ExecutorAcrossV4MigrationTest {
    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder((dataSource, name) -> IdempotencyMigrations.migrate(dataSource, name, "3"))
            .poolSize(6).build();

    @Test
    void writersWaitForTheMigrationAndThenWriteIntoTheNewOutboxWithTheirOwnTransactionId() throws Exception {
        Jdbi jdbi = Jdbi.create(schema.dataSource());
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
        for (int i = 0; i < 6; i++) {
            writeEvent(executor, "before-" + i);
        }
        CompletableFuture<Void> migration;
        CompletableFuture<Outcome<String>> waiting;
        try (Handle openWriter = jdbi.open()) {
            openWriter.begin();
            openWriter.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                    + "VALUES ('t1', 'payments', 'open', '{}')");
            migration = CompletableFuture.runAsync(() -> IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "4"));
            LockWaits.awaitTable(schema.dataSource(), schema.name() + ".outbox_events", 1);
            waiting = CompletableFuture.supplyAsync(() -> writeEvent(executor, "during"));
            LockWaits.awaitTable(schema.dataSource(), schema.name() + ".outbox_events", 2);
            openWriter.commit();
        }
        migration.get(30, TimeUnit.SECONDS);
        String duringTxid = waiting.get(30, TimeUnit.SECONDS).result();
        String afterTxid = writeEvent(executor, "after").result();

        List<Map<String, Object>> events = jdbi.withHandle(h -> h.createQuery(
                "SELECT e.partition_key, e.generation, e.txid::text AS txid, s.status FROM outbox_events e "
                        + "JOIN outbox_event_states s ON s.id = e.id ORDER BY e.id").mapToMap().list());
        assertEquals(List.of("before-0", "before-1", "before-2", "before-3", "before-4", "before-5", "open", "during", "after"),
                events.stream().map(e -> e.get("partition_key")).toList());
        Object migrationTxid = events.get(0).get("txid");
        assertEquals(7, events.stream().filter(e -> e.get("txid").equals(migrationTxid)).count(), "carried over by the migration");
        assertEquals(duringTxid, events.get(7).get("txid"));
        assertEquals(afterTxid, events.get(8).get("txid"));
        assertTrue(events.stream().allMatch(e -> ((Number) e.get("generation")).intValue() == 0 && e.get("status").equals("pending")),
                events.toString());
    }

    private static Outcome<String> writeEvent(PostgresIdempotentExecutor executor, String partitionKey) {
        return executor.run("key-" + partitionKey, "t1", tx -> {
            tx.outbox().publish("payments", partitionKey, Map.of("n", 1));
            return tx.handle().createQuery("SELECT pg_current_xact_id()::text").mapTo(String.class).one();
        });
    }
}

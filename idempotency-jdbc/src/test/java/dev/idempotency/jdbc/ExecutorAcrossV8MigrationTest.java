package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An executor whose connections have prepared its outbox inserts on the server (pgjdbc does after five
 * uses) keeps working when V8 drops the id column's default and lets its trigger draw the id: no call
 * fails, and ids go on one at a time, none drawn twice for one event.
 */
@Timeout(60)
class ExecutorAcrossV8MigrationTest {
    /** More than pgjdbc's prepareThreshold (5) uses of each statement on each of the pool's connections. */
    private static final int CALLS = 20;

    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder((dataSource, name) -> IdempotencyMigrations.migrate(dataSource, name, "6"))
            .poolSize(2).build();

    @Test
    void callsWithOneAndTwoEventsSucceedAcrossTheMigrationAndIdsGoOnOneAtATime() {
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
        for (int i = 0; i < CALLS; i++) {
            assertEquals(Outcome.firstRun("before-" + i), emit(executor, "before-" + i, 1 + i % 2));
        }

        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        for (int i = 0; i < CALLS; i++) {
            assertEquals(Outcome.replay("before-" + i), emit(executor, "before-" + i, 1 + i % 2));
            assertEquals(Outcome.firstRun("after-" + i), emit(executor, "after-" + i, 1 + i % 2));
        }
        List<Long> ids = Jdbi.create(schema.dataSource()).withHandle(h ->
                h.createQuery("SELECT id FROM outbox_events ORDER BY id").mapTo(Long.class).list());
        assertEquals(LongStream.rangeClosed(1, 3 * CALLS).boxed().toList(), ids);
    }

    private static Outcome<String> emit(PostgresIdempotentExecutor executor, String key, int events) {
        return executor.run(key, "t1", tx -> {
            for (int n = 0; n < events; n++) {
                tx.outbox().publish("payments", key, Map.of("n", n));
            }
            return key;
        });
    }
}

package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An executor whose connections have prepared its statements on the server (pgjdbc does after five
 * uses) keeps working when V6 moves the keys and outbox tables' rules to a domain under it: no call fails, and
 * results and failures stored before replay after.
 */
@Timeout(60)
class ExecutorAcrossV6MigrationTest {
    /** More than pgjdbc's prepareThreshold (5) uses of each statement on each of the pool's connections. */
    private static final int CALLS = 20;

    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder((dataSource, name) -> IdempotencyMigrations.migrate(dataSource, name, "5"))
            .poolSize(2).build();

    @Test
    void callsOnServerPreparedStatementsSucceedAcrossTheMigrationAndKeysStoredBeforeReplay() {
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
        for (int i = 0; i < CALLS; i++) {
            assertEquals(Outcome.firstRun("before-" + i), charge(executor, "before-" + i));
            assertEquals(Outcome.replay("before-" + i), charge(executor, "before-" + i));
            decline(executor, "declined-before-" + i);
        }

        assertEquals(1, IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "6").migrationsExecuted, "V6");

        for (int i = 0; i < CALLS; i++) {
            assertEquals(Outcome.replay("before-" + i), charge(executor, "before-" + i));
            assertEquals(Outcome.firstRun("after-" + i), charge(executor, "after-" + i));
            assertEquals(Outcome.replay("after-" + i), charge(executor, "after-" + i));
            decline(executor, "declined-before-" + i);
            decline(executor, "declined-after-" + i);
        }
    }

    private static Outcome<String> charge(PostgresIdempotentExecutor executor, String key) {
        return executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", key, Map.of("key", key));
            return key;
        });
    }

    /** A declared business failure, stored on the first call and replayed on the next. */
    private static void decline(PostgresIdempotentExecutor executor, String key) {
        BusinessFailure failure = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
            throw new BusinessFailure("card_declined", "declined", Map.of());
        }));
        assertEquals("card_declined", failure.code());
    }
}

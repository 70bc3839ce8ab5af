package dev.idempotency.jdbc;

import dev.idempotency.core.LeaseRequest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A schema without the migrations, or the wrong schema configured, fails with the fix in the message. */
@Timeout(60)
class SchemaNotMigratedTest {
    @RegisterExtension
    static final MigratedSchema unmigrated = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("unmigrated").build();
    @RegisterExtension
    static final MigratedSchema olderVersion = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("v3only").build();
    @RegisterExtension
    static final ExecutorFixture migrated = new ExecutorFixture(4);

    @Test
    void theExecutorOnAnUnmigratedSchemaNamesTheMigrationAndTheSchemaSetting() {
        PostgresIdempotentExecutor executor = executorOn(unmigrated.name());

        SchemaNotMigratedException e = assertThrows(SchemaNotMigratedException.class,
                () -> executor.run("k1", "t1", tx -> "never"));
        SchemaNotMigratedException lease = assertThrows(SchemaNotMigratedException.class,
                () -> executor.runWithLease(
                        LeaseRequest.builder("k1", "t1").lease(Duration.ofSeconds(1)).resultType(String.class).build(),
                        l -> "never", (tx, s) -> s));

        assertNamesTheFix(e, unmigrated.name(), "IdempotencyConfig.schema");
        assertNamesTheFix(lease, unmigrated.name(), "IdempotencyConfig.schema");
    }

    @Test
    void aSchemaThatDoesNotExistGetsTheSameAnswer() {
        PostgresIdempotentExecutor executor = executorOn("no_such_schema_for_idempotency");

        SchemaNotMigratedException e = assertThrows(SchemaNotMigratedException.class,
                () -> executor.run("k1", "t1", tx -> "never"));

        assertNamesTheFix(e, "no_such_schema_for_idempotency", "IdempotencyConfig.schema");
    }

    @Test
    void theSweeperOnAnUnmigratedSchemaNamesTheMigrationAndItsSchemaSetting() {
        Sweeper sweeper = Sweeper.builder(unmigrated.dataSource()).schema(unmigrated.name()).build();

        SchemaNotMigratedException e = assertThrows(SchemaNotMigratedException.class, sweeper::sweepOnce);

        assertNamesTheFix(e, unmigrated.name(), "Sweeper.Builder.schema");
    }

    @Test
    void theSweeperOnASchemaMigratedToAnOlderVersionSaysSoAndNamesTheMissingTable() {
        IdempotencyMigrations.migrate(olderVersion.dataSource(), olderVersion.name(), "3");
        Sweeper sweeper = Sweeper.builder(olderVersion.dataSource()).schema(olderVersion.name()).build();

        SchemaNotMigratedException e = assertThrows(SchemaNotMigratedException.class, sweeper::sweepOnce);

        assertNamesTheFix(e, olderVersion.name(), "Sweeper.Builder.schema");
        assertTrue(e.getMessage().contains("not to this version's migrations"), e.getMessage());
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
    }

    @Test
    void unknownOutcomesOnAnUnmigratedSchemaNamesTheMigration() {
        UnknownOutcomes operator = UnknownOutcomes.builder(unmigrated.dataSource())
                .config(IdempotencyConfig.builder().schema(unmigrated.name()).build()).build();

        assertNamesTheFix(assertThrows(SchemaNotMigratedException.class, () -> operator.list(10)),
                unmigrated.name(), "IdempotencyConfig.schema");
        assertNamesTheFix(assertThrows(SchemaNotMigratedException.class, () -> operator.resolveAsNotRun("k1", "t1")),
                unmigrated.name(), "IdempotencyConfig.schema");
    }

    @Test
    void aMissingTableInTheCallbackItselfIsTheCallbacksOwnError() {
        PostgresIdempotentExecutor executor = executorOn(migrated.schema.name());

        RuntimeException e = assertThrows(RuntimeException.class, () -> executor.run(ExecutorFixture.newKey(), "t1",
                tx -> tx.handle().createQuery("SELECT count(*) FROM no_such_business_table").mapTo(Long.class).one()));

        assertFalse(e instanceof SchemaNotMigratedException, String.valueOf(e));
    }

    /** Every executor here connects through the unmigrated schema's pool; only the configured schema differs. */
    private static PostgresIdempotentExecutor executorOn(String schema) {
        return PostgresIdempotentExecutor.builder(unmigrated.dataSource())
                .config(IdempotencyConfig.builder().schema(schema).build()).build();
    }

    private static void assertNamesTheFix(SchemaNotMigratedException e, String schema, String setting) {
        String message = e.getMessage();
        assertEquals(schema, e.schema());
        assertTrue(message.contains("IdempotencyMigrations.migrate(dataSource, \"" + schema + "\")"), message);
        assertTrue(message.contains(setting), message);
        assertTrue(message.contains("schema \"" + schema + "\""), message);
    }
}

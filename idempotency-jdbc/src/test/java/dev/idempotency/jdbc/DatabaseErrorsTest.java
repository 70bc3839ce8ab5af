package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.core.TransientFailureException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;

/** Which database failures reach the caller as transient, as "schema not migrated", or unchanged. */
class DatabaseErrorsTest {

    private static RuntimeException failed(String sqlState) {
        return new IllegalStateException("statement failed", new SQLException("server said no", sqlState));
    }

    @Test
    void theSqlStateIsTheFirstOneAmongTheCauses() {
        RuntimeException e = new RuntimeException(new SQLException("outer", null, new SQLException("inner", "40P01")));

        assertEquals("40P01", DatabaseErrors.sqlState(e));
        assertNull(DatabaseErrors.sqlState(new RuntimeException("no SQL here")));
    }

    @Test
    void deadlocksSerializationFailuresLockTimeoutsAndLostConnectionsAreTransient() {
        for (String state : new String[] {"40001", "40P01", "55P03", "57P01", "53300", "08006"}) {
            RuntimeException translated = DatabaseErrors.translate(failed(state), "k1", "t1");

            TransientFailureException transient_ = (TransientFailureException) translated;
            assertEquals(state, transient_.sqlState());
            assertTrue(transient_.getMessage().contains("idempotency key 'k1' of tenant 't1'"), transient_.getMessage());
            assertTrue(transient_.getMessage().contains("Retry with the same key"), transient_.getMessage());
        }
    }

    @Test
    void aPoolTimeoutWithoutSqlStateIsTransient() {
        RuntimeException e = new IllegalStateException(new SQLTransientConnectionException("Connection is not available"));

        assertTrue(DatabaseErrors.translate(e, "k1", "t1") instanceof TransientFailureException);
    }

    @Test
    void aConstraintViolationPassesUnchanged() {
        RuntimeException e = failed("23505");

        assertSame(e, DatabaseErrors.translate(e, "k1", "t1"));
    }

    @Test
    void theLibrarysOwnErrorsPassUnchangedEvenWithARetryableCause() {
        KeyInProgressException inProgress = new KeyInProgressException("in progress",
                new SQLException("lock timeout", "55P03"));

        assertSame(inProgress, DatabaseErrors.translate(inProgress, "k1", "t1"));
    }

    @Test
    void aMissingTableOrSchemaNamesTheMigrationAndTheSetting() {
        for (String state : new String[] {"42P01", "3F000"}) {
            RuntimeException translated = DatabaseErrors.schemaMissing(failed(state), "billing", "IdempotencyConfig.schema");

            SchemaNotMigratedException missing = (SchemaNotMigratedException) translated;
            assertEquals("billing", missing.schema());
            assertTrue(missing.getMessage().contains("IdempotencyMigrations.migrate(dataSource, \"billing\")"),
                    missing.getMessage());
            assertTrue(missing.getMessage().contains("IdempotencyConfig.schema"), missing.getMessage());
        }
    }

    @Test
    void otherFailuresAreNotTakenForAMissingSchema() {
        RuntimeException e = failed("40P01");

        assertSame(e, DatabaseErrors.schemaMissing(e, "billing", "IdempotencyConfig.schema"));
    }
}

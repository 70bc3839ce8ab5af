package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyException;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.sql.SQLException;
import java.sql.SQLTransientException;
import java.sql.SQLRecoverableException;
import java.util.Set;

/** Recognises database failures that a retry may fix, and turns them into {@link TransientFailureException}. */
final class DatabaseErrors {
    /** SQLSTATEs that mean "try again": concurrency conflicts, shutdowns, refused or lost connections. */
    private static final Set<String> RETRYABLE_STATES = Set.of(
            "40001", // serialization_failure
            "40P01", // deadlock_detected
            "55P03", // lock_not_available (lock_timeout in the callback's own statements)
            "57P01", // admin_shutdown
            "57P02", // crash_shutdown
            "57P03", // cannot_connect_now
            "53300"  // too_many_connections
    );

    /** SQLSTATEs of a statement naming a table or schema that does not exist: migrations not applied there. */
    private static final String UNDEFINED_TABLE = "42P01";
    private static final String INVALID_SCHEMA_NAME = "3F000";

    private DatabaseErrors() {
    }

    /** The SQLSTATE of the first SQLException in {@code e}'s causes, or null. */
    static String sqlState(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sqlException && sqlException.getSQLState() != null) {
                return sqlException.getSQLState();
            }
        }
        return null;
    }

    /** Whether {@code e} says a table the statement named does not exist (SQLSTATE 42P01). */
    static boolean undefinedTable(Throwable e) {
        return UNDEFINED_TABLE.equals(sqlState(e));
    }

    /** {@code e} as a {@link TransientFailureException} if a retry may fix it, else {@code e} itself. */
    static RuntimeException translate(RuntimeException e, String key, String tenant) {
        // Our own errors (a claim that waited past the budget is a 409, not a 503) pass unchanged.
        if (e instanceof IdempotencyException || !retryable(e)) {
            return e;
        }
        String state = sqlState(e);
        return new TransientFailureException("The database failed while running idempotency key '" + key + "' of tenant '"
                + tenant + "'" + (state == null ? "" : " (SQLSTATE " + state + ")") + ": " + rootMessage(e)
                + ". Retry with the same key: it replays what committed and runs what did not (HTTP 503).", state, e);
    }

    /**
     * {@code e} as a {@link SchemaNotMigratedException} if it says a relation or schema the library's
     * own statement named does not exist, else {@code e} itself. Call it only around the library's
     * statements: a callback's own missing table is the callback's error. {@code schemaSetting} is
     * where the user sets the schema (e.g. {@code IdempotencyConfig.schema}).
     */
    static RuntimeException schemaMissing(RuntimeException e, String schema, String schemaSetting) {
        String state = sqlState(e);
        if (!UNDEFINED_TABLE.equals(state) && !INVALID_SCHEMA_NAME.equals(state)) {
            return e;
        }
        // A schema migrated to an older version lacks only the newer tables: the message covers both cases.
        return new SchemaNotMigratedException("A table of the idempotency library is missing from schema \"" + schema
                + "\" (SQLSTATE " + state + ": " + rootMessage(e) + "): the schema is not migrated, or not to this version's"
                + " migrations. Apply the migrations to it with IdempotencyMigrations.migrate(dataSource, \""
                + schema + "\") (or the relay's --migrate), or set " + schemaSetting + " to the schema that holds them.",
                schema, e);
    }

    private static boolean retryable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLTransientException || t instanceof SQLRecoverableException) {
                return true; // includes HikariCP's "connection is not available, request timed out"
            }
            if (t instanceof SQLException sqlException && sqlException.getSQLState() != null) {
                String state = sqlException.getSQLState();
                return state.startsWith("08") || RETRYABLE_STATES.contains(state);
            }
        }
        return false;
    }

    /** What went wrong, for a message of the library's own: never a bound value (see {@link RedactedErrors}). */
    static String rootMessage(Throwable e) {
        return RedactedErrors.describe(e);
    }
}

package dev.idempotency.jdbc.internal;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import java.sql.BatchUpdateException;
import java.sql.SQLException;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementException;
import org.jdbi.v3.core.statement.StatementExceptions;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Database errors of the library's own statements without the values those statements bound:
 * results, business failures, outbox payloads and publish errors may hold personal data, and an
 * exception's text ends up in logs. Two things quote bound values, and both are removed:
 * <ul>
 *   <li>Jdbi renders a failed statement's SQL and arguments into its exception's message;</li>
 *   <li>PostgreSQL's error detail and context ({@code Failing row contains (...)},
 *       {@code JSON data, line 1: ...}), which pgjdbc puts into the message unless the connection
 *       sets {@code logServerErrorDetail=false}.</li>
 * </ul>
 * What stays: the exception types a caller tests for ({@link UnableToExecuteStatementException},
 * {@link SQLException}), the SQLSTATE, PostgreSQL's primary message ("new row for relation ...
 * violates check constraint ..."), and the stack traces. The server's detail fields remain readable
 * in code through {@link PSQLException#getServerErrorMessage()}, just not in any message.
 *
 * <p>Not API: public for the relay module.
 */
public final class RedactedErrors {
    private RedactedErrors() {
    }

    /**
     * Makes every statement of {@code jdbi} render exceptions without its SQL arguments. Only for a
     * Jdbi the library created itself; a user's Jdbi is never changed.
     */
    public static Jdbi withoutArgumentsInMessages(Jdbi jdbi) {
        jdbi.getConfig(StatementExceptions.class).setMessageRendering(StatementExceptions.MessageRendering.NONE);
        return jdbi;
    }

    /**
     * {@code e} with every database error in its causes and suppressed exceptions rebuilt without
     * bound values (see the class comment); {@code e} itself if it holds none.
     */
    public static RuntimeException redact(RuntimeException e) {
        Throwable redacted = redactThrowable(e, 0);
        return redacted instanceof RuntimeException runtime ? runtime : e;
    }

    /**
     * An error as the library may quote it in a message of its own: the first database error's
     * message without detail or context, else the innermost cause's message.
     */
    public static String describe(Throwable e) {
        Throwable root = e;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return String.valueOf(redactSql(sql, 0).getMessage());
            }
            root = t;
        }
        return String.valueOf(root.getMessage());
    }

    private static Throwable redactThrowable(Throwable t, int depth) {
        if (t == null || depth > 20) {
            return t;
        }
        Throwable redacted;
        if (t instanceof StatementException statement) {
            // Rebuilt without its context, so Jdbi has no statement or arguments to render.
            Throwable cause = redactThrowable(statement.getCause(), depth + 1);
            redacted = new UnableToExecuteStatementException(cause instanceof Exception ex ? ex
                    : new SQLException("statement failed: " + statement.getClass().getName()), null);
        } else if (t instanceof SQLException sql) {
            redacted = redactSql(sql, depth);
        } else {
            // Another type (ours, or a wrapper) keeps its identity: the library builds its own messages
            // from describe() and redacted causes.
            return t;
        }
        redacted.setStackTrace(t.getStackTrace());
        for (Throwable suppressed : t.getSuppressed()) {
            redacted.addSuppressed(redactThrowable(suppressed, depth + 1));
        }
        return redacted;
    }

    private static SQLException redactSql(SQLException sql, int depth) {
        SQLException redacted;
        if (sql instanceof PSQLException psql && psql.getServerErrorMessage() != null) {
            ServerErrorMessage server = psql.getServerErrorMessage();
            redacted = new PSQLException(server, false);
        } else if (sql instanceof BatchUpdateException batch) {
            // pgjdbc quotes the failed entry with its parameters inlined; its next exception says why.
            SQLException next = batch.getNextException();
            redacted = new BatchUpdateException("a batch entry failed: "
                    + (next == null ? "(no detail)" : redactSql(next, depth + 1).getMessage()),
                    batch.getSQLState(), batch.getErrorCode(), batch.getUpdateCounts());
        } else {
            return sql; // the driver's and the pool's own messages quote no bound value
        }
        redacted.setStackTrace(sql.getStackTrace());
        return redacted;
    }

    /**
     * What Jackson could not read or write, without its message: that quotes the JSON's values
     * ("Cannot deserialize ... from String \"...\"", "Unrecognized token '...'"). The field path
     * and the position stay.
     */
    public static String jsonProblem(JsonProcessingException e) {
        StringBuilder problem = new StringBuilder(e.getClass().getSimpleName());
        if (e instanceof JsonMappingException mapping && !mapping.getPathReference().isEmpty()) {
            problem.append(" at ").append(mapping.getPathReference());
        }
        JsonLocation location = e.getLocation();
        if (location != null && location.getLineNr() > 0) {
            problem.append(" at line ").append(location.getLineNr()).append(", column ").append(location.getColumnNr());
        }
        return problem.toString();
    }

    /** A stand-in cause for Jackson's exception: its type, path and stack trace, not its message. */
    public static Exception jsonStandIn(JsonProcessingException e) {
        Exception standIn = new IllegalArgumentException(e.getClass().getName() + ": " + jsonProblem(e));
        standIn.setStackTrace(e.getStackTrace());
        return standIn;
    }
}

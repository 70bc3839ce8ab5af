package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyException;

/**
 * A connection pooler between the application and PostgreSQL (PgBouncer in transaction or statement
 * mode, without prepared-statement tracking) hands this client's server-side prepared statements to
 * other clients' backends, so a statement could run another client's SQL. Raised when the executor
 * is built or the relay starts and such a pooler is detected, and when one of its errors is met
 * during a call; the message names the fix. Nothing was committed by the call that raised it.
 */
public final class PoolerBreaksPreparedStatementsException extends IdempotencyException {
    /** What to change, the same in every message. */
    public static final String FIX = "Use PgBouncer >= 1.21 with max_prepared_statements > 0 (statements stay prepared), "
            + "or add prepareThreshold=0 to the JDBC URL (e.g. jdbc:postgresql://host:6432/db?prepareThreshold=0; "
            + "PostgreSQL then parses and plans every statement).";

    public PoolerBreaksPreparedStatementsException(String message) {
        super(message + " " + FIX);
    }

    public PoolerBreaksPreparedStatementsException(String message, Throwable cause) {
        super(message + " " + FIX, cause);
    }
}

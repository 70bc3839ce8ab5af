package dev.idempotency.core;

/**
 * The database failed in a way a retry may fix: a deadlock or serialization failure between
 * concurrent callers, a lost connection, a server that is restarting, or no pooled connection free
 * within the pool's timeout. The call's transaction did not commit, or, if the connection was lost
 * during commit, its outcome is unknown: either way retrying with the same key is safe, since a
 * retry replays what committed and runs what did not. Map to HTTP 503 with {@code Retry-After}.
 */
public class TransientFailureException extends IdempotencyException {
    private final String sqlState;

    public TransientFailureException(String message, String sqlState, Throwable cause) {
        super(message, cause);
        this.sqlState = sqlState;
    }

    /** PostgreSQL's SQLSTATE for the failure (e.g. {@code 40P01} for a deadlock), or null if there was none. */
    public String sqlState() {
        return sqlState;
    }
}

package dev.idempotency.core;

/**
 * The callback's result could not be stored (not serializable to JSON, larger than the configured
 * maximum, or of a type a replay may not rebuild). Everything the call wrote was rolled back, the
 * key included. This is a programming error: map to HTTP 500.
 */
public class ResultNotStorableException extends IdempotencyException {
    public ResultNotStorableException(String message) {
        super(message);
    }

    public ResultNotStorableException(String message, Throwable cause) {
        super(message, cause);
    }
}

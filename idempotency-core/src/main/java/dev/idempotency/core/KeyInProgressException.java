package dev.idempotency.core;

/**
 * Another caller is running the same {@code (tenant, key)} and did not finish within the wait
 * budget, or holds a lease on it. Nothing ran in this call. Map to HTTP 409 and let the client
 * retry later.
 */
public class KeyInProgressException extends IdempotencyException {
    public KeyInProgressException(String message) {
        super(message);
    }

    public KeyInProgressException(String message, Throwable cause) {
        super(message, cause);
    }
}

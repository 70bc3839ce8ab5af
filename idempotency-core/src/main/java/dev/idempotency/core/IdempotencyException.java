package dev.idempotency.core;

/** Base type of the errors the executor raises about a key's state; catch a subtype to map it to a response. */
public abstract class IdempotencyException extends RuntimeException {
    protected IdempotencyException(String message) {
        super(message);
    }

    protected IdempotencyException(String message, Throwable cause) {
        super(message, cause);
    }
}

package dev.idempotency.core;

/**
 * The root of every exception this library throws of its own (a key in progress or reused, a failure
 * a retry may fix, a schema not migrated, ...): catch it to handle them all, or a subtype to map one
 * to a response. Each subtype's message says what happened and what to do. A {@link BusinessFailure}
 * is the application's own outcome, stored and replayed, and is not one of them.
 * Arguments that break a documented rule (a null, a bound exceeded) still get the JDK's
 * {@link IllegalArgumentException}, {@link NullPointerException} or {@link IllegalStateException}.
 */
public abstract class IdempotencyException extends RuntimeException {
    protected IdempotencyException(String message) {
        super(message);
    }

    protected IdempotencyException(String message, Throwable cause) {
        super(message, cause);
    }
}

package dev.idempotency.core;

/**
 * The idempotency key or tenant is missing or malformed; nothing was sent to the database.
 * The message names the field. Map to HTTP 400.
 */
public class InvalidIdempotencyKeyException extends IdempotencyException {
    private final String field;

    public InvalidIdempotencyKeyException(String field, String problem) {
        super(field + " " + problem);
        this.field = field;
    }

    /** The offending argument: {@code "key"} or {@code "tenant"}. */
    public String field() {
        return field;
    }
}

package dev.idempotency.outbox;

/**
 * The outbox tables cannot be relayed as they are (an older schema, a setting that would break
 * per-key order); nothing was started. The message names the fix.
 */
public final class OutboxSchemaException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    OutboxSchemaException(String message) {
        super(message);
    }
}

package dev.idempotency.outbox;

import dev.idempotency.core.IdempotencyException;

/**
 * The outbox tables cannot be relayed as they are (an older schema, a setting that would break
 * per-key order); nothing was started. The message names the fix.
 */
public final class OutboxSchemaException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    OutboxSchemaException(String message) {
        super(message);
    }
}

package dev.idempotency.outbox.cli;

import dev.idempotency.core.IdempotencyException;

/** A command's tables are not in the schema it was given; the message names the command that fixes it. */
final class SchemaNotReadyException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    SchemaNotReadyException(String message) {
        super(message);
    }
}

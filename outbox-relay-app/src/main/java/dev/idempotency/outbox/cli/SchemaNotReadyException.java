package dev.idempotency.outbox.cli;

/** A command's tables are not in the schema it was given; the message names the command that fixes it. */
final class SchemaNotReadyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SchemaNotReadyException(String message) {
        super(message);
    }
}

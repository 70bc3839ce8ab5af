package dev.idempotency.core;

/**
 * The library's tables are not where it looked: the migrations were never applied to that schema,
 * or the configured schema is not the one they were applied to. Nothing ran. The message names the
 * schema searched and both fixes; this is a deployment error, not a retryable one.
 */
public class SchemaNotMigratedException extends IdempotencyException {
    private final String schema;

    public SchemaNotMigratedException(String message, String schema, Throwable cause) {
        super(message, cause);
        this.schema = schema;
    }

    /** The schema the library looked in. */
    public String schema() {
        return schema;
    }
}

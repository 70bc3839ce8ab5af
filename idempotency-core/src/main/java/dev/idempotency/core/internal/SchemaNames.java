package dev.idempotency.core.internal;

import java.util.regex.Pattern;

/**
 * The one rule for schema names, applied by every component that takes one (executor
 * configuration, sweeper, migrations, relay), and the one default. Not API.
 */
public final class SchemaNames {
    /** The schema the library's tables live in when none is named. */
    public static final String DEFAULT = "idempotency";

    /** Lower-case SQL identifiers only, so a schema name never needs more than plain double quotes. */
    private static final Pattern SCHEMA_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    private SchemaNames() {
    }

    /**
     * Returns {@code schema} if it is a lower-case SQL identifier, so it is quoted safely and never
     * concatenated raw; else throws {@link IllegalArgumentException} naming the setting.
     */
    public static String require(String schema) {
        if (schema == null || !SCHEMA_NAME.matcher(schema).matches()) {
            throw new IllegalArgumentException("schema must be a lower-case SQL identifier matching "
                    + SCHEMA_NAME.pattern() + " (was " + schema + ")");
        }
        return schema;
    }
}

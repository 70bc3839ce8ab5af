package dev.idempotency.outbox.cli;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;

/**
 * Checks, before a command starts, that the library's tables it uses are in its schema, so that a
 * schema never migrated, or a wrong {@code --schema}, is refused with the command that fixes it
 * instead of a 42P01 stack trace from the first statement. V10's outbox_relay_stats and sweeper_runs are
 * not required: without them the relay and the sweeper record no statistics and say so once at INFO.
 */
final class RequiredTables {
    /** The relay's tables (migrations V1, V2 and V4's outbox_retries). */
    static final List<String> RELAY = List.of("outbox_events", "outbox_relay_partitions", "outbox_relay_instances",
            "outbox_retries");
    /** What the sweeper deletes from besides the outbox. */
    static final List<String> SWEEPER = List.of("idempotency_keys");
    /** What the dead-letter commands read and requeue (migration V4). */
    static final List<String> DEAD_LETTERS = List.of("outbox_events", "outbox_retries");

    /**
     * Which of the named tables are missing from the schema, and which other schemas hold an outbox
     * table (the likely meant one). Reads the catalogs only: takes no lock and needs no privilege on the tables.
     */
    private static final String FIND_MISSING = """
            SELECT ARRAY(SELECT t FROM unnest(CAST(? AS text[])) AS t
                         WHERE to_regclass(format('%I.%I', CAST(? AS text), t)) IS NULL) AS missing,
                   ARRAY(SELECT n.nspname FROM pg_catalog.pg_class c
                         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.relname = 'outbox_events' AND c.relkind IN ('r', 'p') AND n.nspname <> CAST(? AS text)
                         ORDER BY 1 LIMIT 5) AS elsewhere""";

    private RequiredTables() {
    }

    /** Throws {@link SchemaNotReadyException} naming the fix unless every one of {@code tables} is in {@code schema}. */
    static void require(DataSource dataSource, String schema, List<String> tables) {
        String[] missing;
        String[] elsewhere;
        try (Connection connection = dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(FIND_MISSING)) {
            statement.setArray(1, connection.createArrayOf("text", tables.toArray()));
            statement.setString(2, schema);
            statement.setString(3, schema);
            try (ResultSet row = statement.executeQuery()) {
                row.next();
                missing = strings(row.getArray("missing"));
                elsewhere = strings(row.getArray("elsewhere"));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not check the tables in schema " + schema + ": " + e.getMessage(), e);
        }
        if (missing.length == 0) {
            return;
        }
        String where = missing.length == tables.size()
                ? "schema \"" + schema + "\" has none of the library's tables (" + String.join(", ", missing) + ")"
                : "schema \"" + schema + "\" lacks the tables " + String.join(", ", missing) + " of a later migration";
        String hint = elsewhere.length > 0
                ? "; or, if the outbox you mean is in schema " + String.join(" or ", elsewhere) + ", pass --schema "
                        + elsewhere[0]
                : "; or, if the tables are in another schema, name it with --schema";
        throw new SchemaNotReadyException(where + ": apply the migrations with 'java -jar outbox-relay.jar migrate"
                + " --schema " + schema + "' (same --jdbc-url), or start the relay with 'run --migrate'" + hint);
    }

    private static String[] strings(Array array) throws SQLException {
        Object[] values = (Object[]) array.getArray();
        return Arrays.copyOf(values, values.length, String[].class);
    }
}

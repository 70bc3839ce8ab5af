package dev.idempotency.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Probes that wait until PostgreSQL backends wait on a lock, read from {@code pg_locks} and
 * {@code pg_stat_activity}: the proof a test needs that a concurrent caller is blocked where it means
 * it to be before it releases the holder, instead of a sleep that assumes so. Each returns once at
 * least the number of waiters asked for is there, and fails after {@link Await#DEFAULT_TIMEOUT}.
 * The queries run on a connection of {@code dataSource}, which must have one to spare.
 */
public final class LockWaits {
    private LockWaits() {
    }

    /** Until backend {@code pid} waits on a heavyweight lock (a row, a transaction id, a table, ...). */
    public static void awaitBackend(DataSource dataSource, int pid) {
        awaitCount(dataSource, "backend " + pid + " waiting on a lock", 1,
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ? AND wait_event_type = 'Lock'", pid);
    }

    /**
     * Until {@code atLeast} backends wait on a lock while running a statement that contains
     * {@code statementFragment}, e.g. a schema-qualified table name only this test's statements carry.
     */
    public static void awaitStatements(DataSource dataSource, String statementFragment, int atLeast) {
        awaitCount(dataSource, atLeast + " statements on " + statementFragment + " waiting on a lock", atLeast,
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, ?) > 0",
                statementFragment);
    }

    /** Until {@code atLeast} sessions wait for an advisory lock of the two-key space {@code space}. */
    public static void awaitAdvisory(DataSource dataSource, int space, int atLeast) {
        awaitCount(dataSource, atLeast + " waiters on an advisory lock of space " + space, atLeast,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ?::oid", space);
    }

    /**
     * Until {@code atLeast} sessions wait for a lock on table {@code table} (a name {@code to_regclass}
     * resolves, schema-qualified where the probe's search path differs), in any mode.
     */
    public static void awaitTable(DataSource dataSource, String table, int atLeast) {
        awaitCount(dataSource, atLeast + " waiters on a lock of table " + table, atLeast,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND NOT granted AND relation = to_regclass(?)",
                table);
    }

    private static void awaitCount(DataSource dataSource, String what, int atLeast, String sql, Object parameter) {
        Await.until(what, () -> count(dataSource, sql, parameter) >= atLeast);
    }

    private static long count(DataSource dataSource, String sql, Object parameter) throws SQLException {
        try (Connection connection = dataSource.getConnection(); PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setObject(1, parameter);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        }
    }
}

package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * V12: the relay's server check ({@code outbox_require_server}) keeps one plan per session, whether the
 * statements calling it run with sequential scans allowed (the relay's writes) or off (its reads, after
 * {@code RelaySql.INDEX_READS}). V7's lookup, after one call of each kind, was planned again at every call.
 * PostgreSQL reports each planning to a superuser who sets {@code log_planner_stats}.
 */
class ServerCheckPlannedOnceMigrationTest {
    private static final int CALLS_PER_STATEMENT = 3;

    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(IdempotencyMigrations::migrate).prefix("v12").poolSize(1).build();

    @Test
    void aSessionMixingSequentialScansOnAndOffPlansTheServerCheckOnce() throws SQLException {
        try (Connection connection = schema.dataSource().getConnection(); Statement statement = connection.createStatement()) {
            List<String> superuser = FirstColumn.of(statement, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user");
            assumeTrue(List.of("true").equals(superuser), "log_planner_stats can only be set by a superuser");
            String token = FirstColumn.of(statement, "INSERT INTO outbox_relay_server DEFAULT VALUES RETURNING token::text").get(0);
            String calls = "SELECT count(outbox_require_server('" + token + "')) FROM generate_series(1, " + CALLS_PER_STATEMENT + ")";
            statement.execute("SET client_min_messages = log");
            statement.execute("SET log_planner_stats = on");

            plannings(statement, calls); // a write's call: sequential scans allowed
            statement.execute("SET enable_seqscan = off"); // then the reads' calls
            List<Integer> perStatement = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                perStatement.add(plannings(statement, calls));
            }

            // Each statement is planned itself (unprepared); the check inside it no more after its first calls.
            assertTrue(perStatement.subList(2, perStatement.size()).stream().allMatch(count -> count <= 1),
                    "plannings per statement of " + CALLS_PER_STATEMENT + " checks: " + perStatement);
            statement.execute("RESET enable_seqscan");
            assertEquals(List.of(String.valueOf(CALLS_PER_STATEMENT)), FirstColumn.of(statement, calls), "every check passes");
        }
    }

    /** Runs {@code sql} and counts the plannings PostgreSQL reported for it. */
    private static int plannings(Statement statement, String sql) throws SQLException {
        statement.clearWarnings();
        FirstColumn.of(statement, sql);
        int count = 0;
        for (SQLWarning warning = statement.getWarnings(); warning != null; warning = warning.getNextWarning()) {
            if (warning.getMessage().contains("PLANNER STATISTICS")) {
                count++;
            }
        }
        return count;
    }
}

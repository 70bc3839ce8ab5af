package dev.idempotency.outbox;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.postgresql.PGStatement;

/**
 * Sends a statement unnamed, so PostgreSQL plans it at each call with the tables' sizes of that
 * moment. For the backlog counts: a generation starts empty after each rotation, and a plan
 * PostgreSQL cached then (a sequential scan, fine for what it took for a 10-page table) would stay in
 * use while the table grows, until autovacuum next updates its statistics. A count runs per metrics
 * scrape, so planning it each time costs little. Also for a relay's first read of a batch behind a
 * backlog, once per full page; caught up, where planning each read cost more than the read, the relay's
 * reads keep cached plans made with sequential scans off ({@link RelaySql#INDEX_READS}).
 */
final class PlannedAtEachCall implements StatementCustomizer {
    static final PlannedAtEachCall INSTANCE = new PlannedAtEachCall();

    private PlannedAtEachCall() {
    }

    @Override
    public void beforeExecution(PreparedStatement statement, StatementContext ctx) throws SQLException {
        statement.unwrap(PGStatement.class).setPrepareThreshold(0);
    }
}

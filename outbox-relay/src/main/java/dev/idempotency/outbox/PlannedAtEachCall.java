package dev.idempotency.outbox;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.postgresql.PGStatement;

/**
 * Sends a statement unnamed, so PostgreSQL plans it at each call with the tables' sizes of that
 * moment (it scales stale statistics by the table's current number of pages). A generation starts
 * empty after each rotation, and a plan PostgreSQL cached while it was small (sequential scans, fine
 * for a table of a few pages) would stay in use while the table grows, until autovacuum next updates
 * its statistics. For the backlog counts (once per metrics scrape) and the first read of each batch
 * (about 0.6 ms of planning, once per relay cycle; with a plan cached while the generations held a few
 * hundred rows, that read scanned every generation whole, and a relay used a fifth of a 2-core machine
 * beside 8 writers). The page walk of a large batch, planned at each call too, drained a 200,000-event
 * backlog about 10% slower, so it keeps its cached plan.
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

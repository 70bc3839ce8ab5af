package dev.idempotency.outbox;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.postgresql.PGStatement;

/**
 * Sends a statement unnamed, so PostgreSQL plans it at each call with the tables' sizes of that
 * moment. For reads whose best plan depends on how big a generation table is (a walk of the primary
 * key in id order from a cursor, the backlog count): a generation starts empty after each rotation, and
 * a plan PostgreSQL cached then (a sequential scan, fine for what it took for a 10-page table) would stay
 * in use while the table grows, until autovacuum next updates its statistics. These reads run once per
 * page of a large batch or per metrics scrape, so planning them each time costs little.
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

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.Query;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay's settling statements that name single events (a page's failures moved to outbox_retries,
 * a retry round's outcomes) find each event by its id, one index lookup each, even when PostgreSQL
 * plans them for tables it believes small (a new deployment, a generation just truncated, no ANALYZE
 * yet) and caches that plan: joined plainly, the plan hashed the events and scanned the whole table,
 * at every settle, while failures piled up, until autovacuum next analyzed the table.
 */
class RelaySettlePlansTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();

    @Test
    void movingAPagesFailuresToRetriesLooksEachEventUpByIndex() throws Exception {
        // Bound on plain JDBC, as OutboxPositions binds it.
        JdbcStatement explain = JdbcStatement.of("EXPLAIN " + new RelaySql(outbox.schema()).settlePageWithRetries);
        List<String> plan = new ArrayList<>();
        try (Connection connection = outbox.dataSource().getConnection(); JdbcStatement.Call call = explain.on(connection)) {
            call.text("instance", "relay-a").integer("partitions", 16).uuid("server", UUID.randomUUID())
                    .integerArray("partitionNos", List.of(0, 1, 2))
                    .bigintArray("epochs", List.of(1L, 1L, 1L))
                    .textArray("consumed", List.of("1:1:"))
                    .textArray("batches", List.of("1:1:"))
                    .bigintArray("cursors", List.of(11L, 12L, 13L))
                    .bigintArray("movedIds", List.of(11L, 12L, 13L))
                    .textArray("movedStatuses", List.of("pending", "pending", "dead"))
                    .integerArray("movedAttempts", List.of(1, 1, 1))
                    .bigintArray("movedDelays", List.of(1000L, 1000L, 0L))
                    .textArray("movedErrors", List.of("refused", "refused", "too large"));
            try (ResultSet rows = call.executeAll()) {
                while (rows.next()) {
                    plan.add(rows.getString(1));
                }
            }
        }

        assertLooksUpByIndex(String.join("\n", plan), "outbox_events", "outbox_events_0_pkey");
    }

    @Test
    void settlingARetryRoundLooksEachRetryUpByIndex() {
        String plan = plan(new RelaySql(outbox.schema()).settleRetries, List.of("ids"), query -> query
                .bindByType("actions", List.of("published", "failed", "dead"), BoundArrays.TEXTS)
                .bindByType("increments", List.of(0, 1, 1), BoundArrays.INTEGERS)
                .bindByType("delays", List.of(0L, 1000L, 0L), BoundArrays.BIGINTS)
                .bindByType("errors", List.of("", "refused", "too large"), BoundArrays.TEXTS));

        assertLooksUpByIndex(plan, "outbox_retries", "outbox_retries_pkey");
    }

    private static void assertLooksUpByIndex(String plan, String table, String index) {
        assertFalse(plan.contains("Seq Scan on " + table), plan);
        assertTrue(plan.contains("Index Scan using " + index), plan);
    }

    /** The plan of {@code statement} bound with Jdbi, as RetryQueue binds it, on the new tables, for three events. */
    private String plan(String statement, List<String> idArrays, Consumer<Query> binds) {
        return Jdbi.create(outbox.dataSource()).withHandle(h -> {
            var query = h.createQuery("EXPLAIN " + statement)
                    .bind("instance", "relay-a").bind("partitions", 16).bind("server", UUID.randomUUID())
                    .bindByType("partitionNos", List.of(0, 1, 2), BoundArrays.INTEGERS)
                    .bindByType("epochs", List.of(1L, 1L, 1L), BoundArrays.BIGINTS);
            for (String ids : idArrays) {
                query.bindByType(ids, List.of(11L, 12L, 13L), BoundArrays.BIGINTS);
            }
            binds.accept(query);
            return String.join("\n", query.mapTo(String.class).list());
        });
    }
}

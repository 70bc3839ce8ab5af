package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    void movingAPagesFailuresToRetriesLooksEachEventUpByIndex() {
        String plan = plan(new RelaySql(outbox.schema()).settlePageWithRetries, List.of("movedIds", "cursors"), query -> query
                .bindArray("consumed", String.class, List.of("1:1:"))
                .bindArray("batches", String.class, List.of("1:1:"))
                .bindArray("movedStatuses", String.class, List.of("pending", "pending", "dead"))
                .bindArray("movedAttempts", Integer.class, List.of(1, 1, 1))
                .bindArray("movedDelays", Long.class, List.of(1000L, 1000L, 0L))
                .bindArray("movedErrors", String.class, List.of("refused", "refused", "too large")));

        assertLooksUpByIndex(plan, "outbox_events", "outbox_events_0_pkey");
    }

    @Test
    void settlingARetryRoundLooksEachRetryUpByIndex() {
        String plan = plan(new RelaySql(outbox.schema()).settleRetries, List.of("ids"), query -> query
                .bindArray("actions", String.class, List.of("published", "failed", "dead"))
                .bindArray("increments", Integer.class, List.of(0, 1, 1))
                .bindArray("delays", Long.class, List.of(0L, 1000L, 0L))
                .bindArray("errors", String.class, List.of("", "refused", "too large")));

        assertLooksUpByIndex(plan, "outbox_retries", "outbox_retries_pkey");
    }

    private static void assertLooksUpByIndex(String plan, String table, String index) {
        assertFalse(plan.contains("Seq Scan on " + table), plan);
        assertTrue(plan.contains("Index Scan using " + index), plan);
    }

    /** The plan of {@code statement} on the fixture's new, never analyzed tables, for three events. */
    private String plan(String statement, List<String> idArrays, Consumer<Query> binds) {
        return Jdbi.create(outbox.dataSource()).withHandle(h -> {
            var query = h.createQuery("EXPLAIN " + statement)
                    .bind("instance", "relay-a").bind("partitions", 16).bind("server", UUID.randomUUID())
                    .bindArray("partitionNos", Integer.class, List.of(0, 1, 2))
                    .bindArray("epochs", Long.class, List.of(1L, 1L, 1L));
            for (String ids : idArrays) {
                query.bindArray(ids, Long.class, List.of(11L, 12L, 13L));
            }
            binds.accept(query);
            return String.join("\n", query.mapTo(String.class).list());
        });
    }
}

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
                .bindByType("consumed", List.of("1:1:"), BoundArrays.TEXTS)
                .bindByType("batches", List.of("1:1:"), BoundArrays.TEXTS)
                .bindByType("movedStatuses", List.of("pending", "pending", "dead"), BoundArrays.TEXTS)
                .bindByType("movedAttempts", List.of(1, 1, 1), BoundArrays.INTEGERS)
                .bindByType("movedDelays", List.of(1000L, 1000L, 0L), BoundArrays.BIGINTS)
                .bindByType("movedErrors", List.of("refused", "refused", "too large"), BoundArrays.TEXTS));

        assertLooksUpByIndex(plan, "outbox_events", "outbox_events_0_pkey");
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

    /** The plan of {@code statement} on the fixture's new, never analyzed tables, for three events. */
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

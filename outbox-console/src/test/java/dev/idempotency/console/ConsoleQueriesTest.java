package dev.idempotency.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.outbox.OutboxDeadLetter;
import dev.idempotency.testing.DeadLetterRows;
import dev.idempotency.testing.MigratedSchema;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The console's own reads (ConsoleSql) against PostgreSQL: each test writes rows of a tenant of its own. */
@Timeout(60)
class ConsoleQueriesTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();
    private static ConsoleQueries queries;

    @BeforeAll
    static void connect() {
        queries = new ConsoleQueries(db.dataSource(), db.name());
    }

    @Test
    void theDeadLetterFilterKeepsTheTopicTenantErrorTextAndAgeAskedFor() {
        DeadLetterRows.insertRetry(db.dataSource(), 1001, "f1", "orders", "a", "dead", "2 hours", "now()", "HTTP 400: Bad IBAN");
        DeadLetterRows.insertRetry(db.dataSource(), 1002, "f1", "orders", "b", "dead", "1 minute", "now()", "unroutable 312 NO_ROUTE");
        DeadLetterRows.insertRetry(db.dataSource(), 1003, "f1", "refunds", "c", "dead", "2 days", "now()", "100% of 5_xx");
        DeadLetterRows.insertRetry(db.dataSource(), 1004, "f2", "orders", "d", "dead", "3 hours", "now()", "HTTP 400: bad iban");
        DeadLetterRows.insertRetry(db.dataSource(), 1005, "f1", "orders", "e", "pending", "3 hours", "now()", "HTTP 400: bad iban");

        assertEquals(List.of(1001L, 1002L), ids(new DeadLetterFilter("orders", "f1", null, null)));
        assertEquals(List.of(1001L, 1004L), ids(new DeadLetterFilter(null, null, "bad iban", null)), "case-insensitive");
        assertEquals(List.of(1001L), ids(new DeadLetterFilter("orders", "f1", null, "1h")));
        assertEquals(List.of(1003L), ids(new DeadLetterFilter(null, "f1", null, "1d")));
        assertEquals(List.of(1003L), ids(new DeadLetterFilter(null, null, "100%", null)), "% is literal");
        assertEquals(List.of(), ids(new DeadLetterFilter(null, null, "5_x", "7d")));
        assertEquals(2, queries.countDeadLetters(new DeadLetterFilter(null, null, "IBAN", null)));
        assertEquals(List.of(1001L), queries.deadLetters(new DeadLetterFilter("orders", null, null, null), 1).stream()
                .map(OutboxDeadLetter::id).toList(), "the limit keeps the oldest");
    }

    @Test
    void aFilterReadFromAFormDropsBlankFieldsAndUnknownAgesAndWritesItselfBack() {
        DeadLetterFilter filter = DeadLetterFilter.from(name -> switch (name) {
            case "topic" -> " orders ";
            case "tenant" -> "";
            case "error" -> "a&b=c";
            case "age" -> "3y";
            default -> null;
        });

        assertEquals(new DeadLetterFilter("orders", null, "a&b=c", null), filter);
        assertEquals("topic=orders&error=a%26b%3Dc", filter.query());
        assertTrue(DeadLetterFilter.from(name -> null).isEmpty());
    }

    @Test
    void eachKeyHeldBackBehindARetryShowsItsFirstEventItsNextAttemptAndHowManyWait() {
        DeadLetterRows.insertRetry(db.dataSource(), 2001, "h1", "orders", "late", "pending", "5 minutes",
                "now() + interval '10 minutes'", "HTTP 503");
        DeadLetterRows.insertRetry(db.dataSource(), 2002, "h1", "orders", "late", "pending", "4 minutes", "now()", null);
        DeadLetterRows.insertRetry(db.dataSource(), 2003, "h1", "orders", "late", "pending", "3 minutes", "now()", null);
        DeadLetterRows.insertRetry(db.dataSource(), 2004, "h1", "orders", "soon", "pending", "1 minute",
                "now() + interval '1 minute'", "confirm timeout");
        DeadLetterRows.insertRetry(db.dataSource(), 2005, "h1", "orders", "gone", "dead", "1 minute", "now()", "rejected");

        List<ConsoleQueries.HeldBackKey> keys = queries.heldBackKeys(100).stream()
                .filter(k -> k.tenant().equals("h1")).toList();

        assertEquals(List.of("soon", "late"), keys.stream().map(ConsoleQueries.HeldBackKey::partitionKey).toList(),
                "due soonest first");
        ConsoleQueries.HeldBackKey late = keys.get(1);
        assertEquals(2001, late.firstEventId());
        assertEquals(3, late.waiting());
        assertEquals("HTTP 503", late.lastError());
        assertTrue(late.nextAttemptAt().isAfter(keys.get(0).nextAttemptAt()));
        assertTrue(queries.heldBack().keys() >= 2);
        assertTrue(queries.heldBack().events() >= 4);
    }

    @Test
    void aKeyReadsWithItsStateTimesAndLeaseAndWhatItStoresOnlyWhenAskedFor() {
        db.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, result_type, expires_at)"
                + " VALUES ('k1', 'order-1', 'completed', '{\"chargeId\": \"ch_secret\"}', 'map', now() + interval '1 day')");
        db.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, failure, lease_token, lease_expires_at,"
                + " expires_at) VALUES ('k1', 'order-2', 'failed', '{\"code\": \"lease_expired\", \"message\": \"unknown\"}',"
                + " 7, now() - interval '1 minute', now() - interval '1 hour')");

        ConsoleQueries.KeyState completed = queries.key("k1", "order-1").orElseThrow();
        ConsoleQueries.KeyState unknown = queries.key("k1", "order-2").orElseThrow();

        assertEquals("completed", KeysPage.describe(completed));
        assertTrue(completed.hasResult());
        assertEquals("map", completed.resultType());
        assertNull(completed.leaseExpiresAt());
        assertFalse(completed.expired());
        assertTrue(unknown.unknownOutcome());
        assertEquals("unknown outcome (lease_expired): waiting for an operator", KeysPage.describe(unknown));
        assertTrue(unknown.leaseExpiresAt() != null && unknown.claimedAt() != null);
        assertFalse(KeysPage.render("k1", "order-1", completed, null, null, new ConsoleView("/console", "", false))
                .contains("ch_secret"));
        assertTrue(queries.keyStored("k1", "order-1").orElseThrow().result().contains("ch_secret"));
        assertTrue(queries.key("k1", "order-3").isEmpty());
    }

    private static List<Long> ids(DeadLetterFilter filter) {
        return queries.deadLetters(filter, 100).stream().map(OutboxDeadLetter::id).toList();
    }
}

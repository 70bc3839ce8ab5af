package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.ResultNotStorableException;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class FirstRunAndReplayTest {
    record Receipt(long paymentId, String status, BigDecimal amount) {
    }

    record Unlisted(String id, int cents) {
    }

    private static ExecutorFixture db;
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        db = new ExecutorFixture("first_run", 4);
        executor = db.executor(c -> c.allowResultTypes(Receipt.class));
    }

    @AfterAll
    static void tearDown() {
        db.close();
    }

    @Test
    void firstCallRunsTheCallbackOnceAndLaterCallsReplayItsResult() {
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();

        Outcome<Receipt> first = executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            return new Receipt(insertPayment(tx, 1000), "captured", new BigDecimal("10.00"));
        });
        Outcome<Receipt> second = executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            return new Receipt(insertPayment(tx, 1000), "captured", new BigDecimal("10.00"));
        });

        assertEquals(1, runs.get());
        assertEquals(1, db.payments("t1", key));
        assertFalse(first.replayed());
        assertTrue(second.replayed());
        assertEquals(first.result(), second.result());
        assertInstanceOf(Receipt.class, second.result());
        assertEquals("completed", db.keyRow("t1", key).get("status"));
    }

    @Test
    void theSameKeyUnderTwoTenantsRunsTwiceIndependently() {
        String key = newKey();

        Outcome<String> a = executor.run(key, "tenant-a", tx -> "a:" + insertPayment(tx, 1));
        Outcome<String> b = executor.run(key, "tenant-b", tx -> "b:" + insertPayment(tx, 2));
        Outcome<String> aAgain = executor.run(key, "tenant-a", tx -> "never");

        assertFalse(a.replayed());
        assertFalse(b.replayed());
        assertTrue(a.result().startsWith("a:") && b.result().startsWith("b:"));
        assertEquals(a.result(), aAgain.result());
        assertEquals(1, db.payments("tenant-a", key));
        assertEquals(1, db.payments("tenant-b", key));
    }

    @Test
    void replaysRebuildJsonValuesMapsListsAndValueTypes() {
        String mapKey = newKey();
        String listKey = newKey();
        String numberKey = newKey();
        executor.run(mapKey, "t1", tx -> Map.of("id", 7, "ok", true));
        executor.run(listKey, "t1", tx -> List.of("a", "b"));
        executor.run(numberKey, "t1", tx -> 42L);

        assertEquals(Map.of("id", 7, "ok", true), executor.run(mapKey, "t1", tx -> Map.of()).result());
        assertEquals(List.of("a", "b"), executor.run(listKey, "t1", tx -> List.of()).result());
        assertEquals(42L, executor.run(numberKey, "t1", tx -> 0L).result());
    }

    @Test
    void aDeclaredResultTypeNeedsNoAllowListAndReplaysAsThatType() {
        String key = newKey();
        PostgresIdempotentExecutor strict = db.executor();

        strict.run(key, "t1", Unlisted.class, tx -> new Unlisted("p-1", 500));
        Outcome<Unlisted> replay = strict.run(key, "t1", Unlisted.class, tx -> new Unlisted("other", 0));

        assertTrue(replay.replayed());
        assertEquals(new Unlisted("p-1", 500), replay.result());
    }

    @Test
    void aResultTypeThatIsNotAllowedForReplayFailsTheFirstCallAndStoresNothing() {
        String key = newKey();
        PostgresIdempotentExecutor strict = db.executor();

        ResultNotStorableException e = assertThrows(ResultNotStorableException.class,
                () -> strict.run(key, "t1", tx -> {
                    insertPayment(tx, 1);
                    return new Unlisted("x", 1);
                }));

        assertTrue(e.getMessage().contains("allowResultTypes"), e.getMessage());
        assertEquals(0, db.keyRows("t1", key));
        assertEquals(0, db.payments("t1", key));
    }

    @Test
    void jsonNodeResultsReplayAsJsonNodes() {
        String key = newKey();
        JsonNode node = executor.config().objectMapper().createObjectNode().put("charge", "ch_1");

        executor.run(key, "t1", tx -> node);
        Outcome<JsonNode> replay = executor.run(key, "t1", tx -> node);

        assertTrue(replay.replayed());
        assertEquals("ch_1", replay.result().get("charge").asText());
    }

    @Test
    void theCallbacksOwnStatementsKeepTheConnectionsLockTimeout() {
        String key = newKey();

        String inside = executor.run(key, "t1", tx -> tx.handle().createQuery("SHOW lock_timeout").mapTo(String.class).one())
                .result();

        assertEquals("0", inside);
    }
}

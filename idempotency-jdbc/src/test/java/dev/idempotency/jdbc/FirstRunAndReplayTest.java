package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.ResultNotStorableException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class FirstRunAndReplayTest {
    record Receipt(long paymentId, String status, BigDecimal amount) {
    }

    record Unlisted(String id, int cents) {
    }

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> c.allowResultTypes(Receipt.class));
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
        assertEquals(1, db.payments(key, "t1"));
        assertFalse(first.replayed());
        assertTrue(second.replayed());
        assertEquals(first.result(), second.result());
        assertInstanceOf(Receipt.class, second.result());
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
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
        assertEquals(1, db.payments(key, "tenant-a"));
        assertEquals(1, db.payments(key, "tenant-b"));
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
    void aMapOrListWithoutADeclaredTypeIsEqualWithTheSameJavaTypesOnTheFirstRunAndEveryReplay() {
        String mapKey = newKey();
        String listKey = newKey();
        Map<String, Object> receipt = new LinkedHashMap<>();
        receipt.put("amount", new BigDecimal("10.10"));
        receipt.put("small", 5L);
        receipt.put("ledgerId", 9_000_000_000L);
        receipt.put("count", 3);
        receipt.put("huge", new BigInteger("123456789012345678901234567890"));
        receipt.put("lines", List.of(new BigDecimal("0.10"), 2L, Map.of("rate", 0.125)));

        Outcome<Map<String, Object>> first = executor.run(mapKey, "t1", tx -> receipt);
        Outcome<Map<String, Object>> replay = executor.run(mapKey, "t1", tx -> Map.of());
        Outcome<List<Object>> firstList = executor.run(listKey, "t1", tx -> List.of(new BigDecimal("1.50"), 7L, 8));
        Outcome<List<Object>> replayedList = executor.run(listKey, "t1", tx -> List.of());

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals(javaTypes(first.result()), javaTypes(replay.result()));
        assertEquals(new BigDecimal("10.10"), replay.result().get("amount"), "the decimal keeps its digits and scale");
        assertEquals(9_000_000_000L, replay.result().get("ledgerId"));
        assertEquals(new BigInteger("123456789012345678901234567890"), replay.result().get("huge"));
        assertEquals(List.of(new BigDecimal("0.10"), 2, Map.of("rate", new BigDecimal("0.125"))), replay.result().get("lines"));
        assertEquals(firstList.result(), replayedList.result());
        assertEquals(javaTypes(firstList.result()), javaTypes(replayedList.result()));
        assertEquals(List.of(new BigDecimal("1.50"), 7, 8), replayedList.result());
    }

    @Test
    void aDeclaredMapTypeIsAlsoEqualOnTheFirstRunAndTheReplay() {
        String key = newKey();
        @SuppressWarnings("unchecked")
        Class<Map<String, Object>> mapType = (Class<Map<String, Object>>) (Class<?>) Map.class;

        Outcome<Map<String, Object>> first = executor.run(key, "t1", mapType,
                tx -> Map.of("amount", new BigDecimal("10.10"), "id", 5L));
        Outcome<Map<String, Object>> replay = executor.run(key, "t1", mapType, tx -> Map.of());

        assertEquals(first.result(), replay.result());
        assertEquals(javaTypes(first.result()), javaTypes(replay.result()));
    }

    /** The Java class of every value in a nested map or list, by path. */
    private static Map<String, String> javaTypes(Object value) {
        Map<String, String> types = new java.util.TreeMap<>();
        collectTypes("", value, types);
        return types;
    }

    private static void collectTypes(String path, Object value, Map<String, String> types) {
        types.put(path, value == null ? "null" : value.getClass().getName());
        if (value instanceof Map<?, ?> map) {
            map.forEach((k, v) -> collectTypes(path + "/" + k, v, types));
        } else if (value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                collectTypes(path + "/" + i, list.get(i), types);
            }
        }
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
        assertEquals(0, db.keyRows(key, "t1"));
        assertEquals(0, db.payments(key, "t1"));
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

    /** README, "Quick start": a callback may write on the handle's JDBC connection, in the same transaction. */
    @Test
    void writesOnTheHandlesJdbcConnectionCommitWithTheResultAndAreUndoneByADeclaredFailure() throws SQLException {
        String key = newKey();
        String declined = newKey();

        Outcome<Long> first = executor.run(key, "t1", Long.class, tx -> insertPaymentOnJdbc(tx, 700));
        Outcome<Long> replay = executor.run(key, "t1", Long.class, tx -> insertPaymentOnJdbc(tx, 700));
        BusinessFailure failure = assertThrows(BusinessFailure.class, () -> executor.run(declined, "t1", Long.class, tx -> {
            insertPaymentOnJdbc(tx, 700);
            throw new BusinessFailure("card_declined", "The card was declined");
        }));

        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals(1, db.payments(key, "t1"));
        assertEquals("card_declined", failure.code());
        assertEquals(0, db.payments(declined, "t1"));
        assertEquals("failed", db.keyRow(declined, "t1").get("status"));
    }

    /** {@link ExecutorFixture#insertPayment} as a plain JDBC statement on the handle's connection. */
    private static long insertPaymentOnJdbc(PostgresTransaction tx, long amount) throws SQLException {
        try (PreparedStatement insert = tx.handle().getConnection()
                .prepareStatement("INSERT INTO payments (tenant_id, request_key, amount) VALUES (?, ?, ?) RETURNING id")) {
            insert.setString(1, tx.tenant());
            insert.setString(2, tx.key());
            insert.setLong(3, amount);
            try (ResultSet row = insert.executeQuery()) {
                row.next();
                return row.getLong(1);
            }
        }
    }

    @Test
    void theCallbacksOwnStatementsKeepTheConnectionsLockTimeout() {
        String key = newKey();

        String inside = executor.run(key, "t1", tx -> tx.handle().createQuery("SHOW lock_timeout").mapTo(String.class).one())
                .result();

        assertEquals("0", inside);
    }
}

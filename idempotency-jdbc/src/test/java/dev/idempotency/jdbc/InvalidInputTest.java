package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.ResultNotStorableException;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class InvalidInputTest {
    /** A result that refers to itself, which no JSON can hold. */
    static final class Node {
        public final List<Node> children = new ArrayList<>();
    }

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> c.maxResultBytes(1024).allowResultTypes(Node.class));
    }

    static List<Arguments> badKeysAndTenants() {
        return List.of(
                Arguments.of(null, "t1", "key", "must not be null"),
                Arguments.of("", "t1", "key", "must not be blank"),
                Arguments.of(" \t ", "t1", "key", "must not be blank"),
                Arguments.of("k".repeat(256), "t1", "key", "at most 255"),
                Arguments.of("k".repeat(10_000), "t1", "key", "at most 255"),
                Arguments.of("bad\u0000key", "t1", "key", "control characters"),
                Arguments.of("bad\nkey", "t1", "key", "control characters"),
                Arguments.of("bad\uD800key", "t1", "key", "unpaired surrogate"),
                Arguments.of("k1", null, "tenant", "must not be null"),
                Arguments.of("k1", "", "tenant", "must not be blank"),
                Arguments.of("k1", "t".repeat(256), "tenant", "at most 255"),
                Arguments.of("k1", "t\u001b1", "tenant", "control characters"),
                // Invisible characters: each key below looks like "key" or "k1" in a log but would be stored apart.
                Arguments.of("\u00A0", "t1", "key", "invisible, format or separator characters (found U+00A0 at index 0)"),
                Arguments.of("key\u00A0", "t1", "key", "invisible, format or separator characters (found U+00A0 at index 3)"),
                Arguments.of("k\u200By", "t1", "key", "found U+200B at index 1"),
                Arguments.of("k\u2028y", "t1", "key", "found U+2028 at index 1"),
                Arguments.of("k\u2029y", "t1", "key", "found U+2029 at index 1"),
                Arguments.of("\uFEFFkey", "t1", "key", "found U+FEFF at index 0"),
                Arguments.of("k\u00ADy", "t1", "key", "found U+00AD at index 1"),
                Arguments.of("k\u3000y", "t1", "key", "found U+3000 at index 1"),
                Arguments.of("k\uDB40\uDC01y", "t1", "key", "found U+E0001 at index 1"),
                Arguments.of("k1", "t\u200B1", "tenant", "found U+200B at index 1"),
                Arguments.of("k1", "\u00A0t1", "tenant", "found U+00A0 at index 0"));
    }

    @Test
    void keysWithAnAsciiSpaceOrVisibleNonAsciiTextAreStillAccepted() {
        for (String key : List.of("order 42 " + newKey(), "Bestellung-\u00FC-" + newKey(), "\u6CE8\u6587-" + newKey(),
                "\uD83D\uDE00-" + newKey())) {
            assertEquals("ok", executor.run(key, "t1", String.class, tx -> "ok").result());
        }
    }

    @ParameterizedTest
    @MethodSource("badKeysAndTenants")
    void aMalformedKeyOrTenantFailsBeforeAnySqlNamingTheField(String key, String tenant, String field, String problem) {
        PostgresIdempotentExecutor noDatabase = PostgresIdempotentExecutor.builder(new UnusableDataSource())
                .config(IdempotencyConfig.defaults()).build();

        InvalidIdempotencyKeyException e = assertThrows(InvalidIdempotencyKeyException.class,
                () -> noDatabase.run(key, tenant, tx -> "never"));

        assertEquals(field, e.field());
        assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
        assertTrue(e.getMessage().contains(problem), e.getMessage());
    }

    @Test
    void aResultOverTheSizeLimitRollsBackEverythingAndARetryRunsAgain() {
        String key = newKey();

        ResultNotStorableException e = assertThrows(ResultNotStorableException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            tx.outbox().publish("payments", key, Map.of("a", 1));
            return "x".repeat(2000);
        }));

        assertTrue(e.getMessage().contains("maximum of 1024 bytes"), e.getMessage());
        assertNothingStored(key);
        assertFalse(executor.run(key, "t1", tx -> "small").replayed());
    }

    @Test
    void aCallbackThatReturnsNullIsToldToReturnAnOutcomeAndNothingIsStored() {
        String key = newKey();

        ResultNotStorableException e = assertThrows(ResultNotStorableException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            return null;
        }));

        assertTrue(e.getMessage().contains("returned null"), e.getMessage());
        assertNothingStored(key);
    }

    @Test
    void aResultThatCannotBeSerializedRollsBackEverything() {
        String key = newKey();

        ResultNotStorableException e = assertThrows(ResultNotStorableException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            Node node = new Node();
            node.children.add(node);
            return node;
        }));

        assertTrue(e.getMessage().contains("cannot be serialized to JSON"), e.getMessage());
        assertNothingStored(key);
    }

    @Test
    void aResultPostgresJsonbRefusesRollsBackEverything() {
        String key = newKey();

        ResultNotStorableException e = assertThrows(ResultNotStorableException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            return "nul\u0000inside";
        }));

        assertTrue(e.getMessage().contains("jsonb"), e.getMessage());
        assertNothingStored(key);
    }

    /** The completion checks its own row in SQL, so the COMMIT sent with it in one flush commits nothing. */
    @Test
    void aCallbackThatDeletesItsOwnKeyRowCommitsNothingAndTheNextCallRunsAgain() {
        String key = newKey();

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            tx.handle().createUpdate("DELETE FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k")
                    .bind("t", tx.tenant()).bind("k", tx.key()).execute();
            tx.outbox().publish("payments", key, Map.of("amount", 1));
            return 1L;
        }));

        assertTrue(e.getMessage().contains("was not in its transaction"), e.getMessage());
        assertNothingStored(key);
        assertEquals(2L, executor.run(key, "t1", tx -> 2L).result());
    }

    @Test
    void aCallbackThatCommitsTheTransactionItselfLeavesAStoredFailureNotAStuckKey() {
        String key = newKey();

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            tx.handle().commit();
            return "x";
        }));
        BusinessFailure retry = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> "never"));

        assertTrue(e.getMessage().contains("committed, rolled back or closed"), e.getMessage());
        assertEquals(CallbackRunner.ENDED_BY_CALLBACK, retry.code());
        assertEquals(1, db.payments(key, "t1"));
    }

    @Test
    void aCallbackThatRollsBackTheTransactionItselfLeavesNothing() {
        String key = newKey();

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            tx.handle().rollback();
            return "x";
        }));

        assertTrue(e.getMessage().contains("Nothing was stored"), e.getMessage());
        assertNothingStored(key);
        assertFalse(executor.run(key, "t1", tx -> "ran").replayed());
    }

    @Test
    void aRollbackThatFailsAfterTheCallbackClosedTheConnectionIsKeptAsSuppressed() {
        String key = newKey();

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
            insertPayment(tx, 1);
            try {
                tx.handle().getConnection().close();
            } catch (SQLException closeFailure) {
                throw new IllegalStateException(closeFailure);
            }
            return "x";
        }));

        assertTrue(e.getMessage().contains("Nothing was stored"), e.getMessage());
        assertEquals(1, e.getSuppressed().length, "the failed rollback, kept beside the cause");
        assertTrue(String.valueOf(e.getSuppressed()[0].getCause()).contains("Connection is closed"),
                String.valueOf(e.getSuppressed()[0]));
        assertNothingStored(key);
    }

    private static void assertNothingStored(String key) {
        assertEquals(0, db.keyRows(key, "t1"));
        assertEquals(0, db.payments(key, "t1"));
        assertEquals(0, db.outboxEvents("t1", key));
    }

    /** Fails the test if the executor ever asks for a connection. */
    private static final class UnusableDataSource implements DataSource {
        @Override
        public Connection getConnection() throws SQLException {
            throw new AssertionError("validation must happen before any SQL");
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() {
            return Logger.getGlobal();
        }

        @Override
        public <T> T unwrap(Class<T> iface) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Join mode with a plain-JDBC {@link CallerTransaction}: a connection the caller opened a transaction
 * on, held in a ThreadLocal, as a framework without Spring would. The Spring adapter's tests are in
 * idempotency-spring.
 */
@Timeout(60)
class JoinCallerTransactionTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);

    /** The caller's transaction: a connection with auto-commit off, and what runs after its commit. */
    static final class ThreadLocalTransaction implements CallerTransaction {
        final ThreadLocal<Connection> connection = new ThreadLocal<>();
        final ThreadLocal<List<Runnable>> afterCommit = ThreadLocal.withInitial(ArrayList::new);

        @Override
        public Optional<Connection> current() {
            return Optional.ofNullable(connection.get());
        }

        @Override
        public void afterCommit(Runnable action) {
            afterCommit.get().add(action);
        }

        /** Runs {@code work} in a transaction of the caller's, committed if {@code commit}, else rolled back. */
        <T> T inTransaction(boolean commit, java.util.function.Function<Connection, T> work) throws SQLException {
            try (Connection c = db.schema.dataSource().getConnection()) {
                c.setAutoCommit(false);
                connection.set(c);
                try {
                    T result = work.apply(c);
                    if (commit) {
                        c.commit();
                        afterCommit.get().forEach(Runnable::run);
                    } else {
                        c.rollback();
                    }
                    return result;
                } finally {
                    connection.remove();
                    afterCommit.remove();
                    c.setAutoCommit(true);
                }
            }
        }
    }

    private final ThreadLocalTransaction caller = new ThreadLocalTransaction();

    private PostgresIdempotentExecutor joining(Runnable afterOutboxCommit) {
        return PostgresIdempotentExecutor.builder(db.schema.dataSource()).config(db.executor().config())
                .afterOutboxCommit(afterOutboxCommit).joinCallerTransactions(caller).build();
    }

    @Test
    void theKeyResultAndEventsCommitWithTheCallersTransactionAndTheListenerRunsAfterIt() throws Exception {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = joining(signals::incrementAndGet);
        String key = newKey();

        Outcome<Long> outcome = caller.inTransaction(true, connection -> {
            Outcome<Long> run = executor.run(key, "t1", Long.class, tx -> {
                tx.outbox().publish("payments", key, Map.of("amount", 10));
                return insertPayment(tx, 10);
            });
            assertEquals(0, db.keyRows(key, "t1"), "nothing is committed before the caller commits");
            assertEquals(0, signals.get());
            assertFalse(isClosed(connection), "the callback's handle left the caller's connection open");
            return run;
        });

        assertFalse(outcome.replayed());
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(1, db.outboxEvents("t1", key));
        assertEquals(1, signals.get());
        assertEquals(outcome.result(), executor.run(key, "t1", Long.class, tx -> -1L).result());
    }

    @Test
    void theCallersRollbackTakesTheKeyResultAndEventsWithItAndARetryRunsAgain() throws Exception {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = joining(signals::incrementAndGet);
        String key = newKey();

        caller.inTransaction(false, connection -> executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", key, Map.of("amount", 10));
            return insertPayment(tx, 10);
        }));

        assertEquals(0, db.keyRows(key, "t1"));
        assertEquals(0, db.payments(key, "t1"));
        assertEquals(0, db.outboxEvents("t1", key));
        assertEquals(0, signals.get());
        assertFalse(caller.inTransaction(true, connection -> executor.run(key, "t1", tx -> "again")).replayed());
    }

    @Test
    void twoKeysInOneCallersTransactionCommitTogether() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        String first = newKey();
        String second = newKey();

        caller.inTransaction(true, connection -> {
            executor.run(first, "t1", tx -> insertPayment(tx, 1));
            // A run inside another's callback joins the same transaction too.
            return executor.run(second, "t1", tx -> executor.run(first, "t1", inner -> -1L).result());
        });

        assertEquals("completed", db.keyRow(first, "t1").get("status"));
        assertEquals("completed", db.keyRow(second, "t1").get("status"));
        assertEquals(1, db.payments(first, "t1"));
    }

    @Test
    void aFirstRunWaitsForPostgresTwiceBesidesTheCallbacksOwnStatementsAndAReplayThreeTimes() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        caller.inTransaction(true, connection -> executor.run(newKey(), "t1", tx -> insertPayment(tx, 1)));
        String key = newKey();
        AtomicInteger firstRun = new AtomicInteger();
        AtomicInteger replay = new AtomicInteger();

        Outcome<Long> replayed = caller.inTransaction(true, connection -> {
            RoundTrips.count(firstRun, () -> executor.run(key, "t1", tx -> insertPayment(tx, 2)));
            return RoundTrips.count(replay, () -> executor.run(key, "t1", tx -> insertPayment(tx, 3)));
        });

        assertTrue(replayed.replayed());
        assertEquals(1, db.payments(key, "t1"));
        // The claim with both savepoints, the callback's insert, the completion with the release.
        assertEquals(3, firstRun.get());
        // The claim, the read of the row it found, then the rollback to and release of its savepoint.
        assertEquals(3, replay.get());
    }

    @Test
    void aCallInsideACallbackThatFailsIsUndoneToItsOwnSavepointAndTheOuterCallStillCommits() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        String outer = newKey();
        String inner = newKey();

        caller.inTransaction(true, connection -> executor.run(outer, "t1", tx -> {
            long id = insertPayment(tx, 1);
            assertThrows(IllegalArgumentException.class, () -> executor.run(inner, "t1", innerTx -> {
                insertPayment(innerTx, 2);
                throw new IllegalArgumentException("inner callback failed");
            }));
            return id;
        }));

        assertEquals("completed", db.keyRow(outer, "t1").get("status"));
        assertEquals(1, db.payments(outer, "t1"));
        assertEquals(0, db.keyRows(inner, "t1"));
        assertEquals(0, db.payments(inner, "t1"));
    }

    @Test
    void anOuterCallbackThatFailsAfterAnInnerRunUndoesBothAndKeepsTheCallersOwnWrites() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        String outer = newKey();
        String inner = newKey();
        String callersOwn = newKey();

        caller.inTransaction(true, connection -> {
            try (var statement = connection.prepareStatement(
                    "INSERT INTO payments (tenant_id, request_key, amount) VALUES ('t1', ?, 7)")) {
                statement.setString(1, callersOwn);
                statement.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            return assertThrows(IllegalStateException.class, () -> executor.run(outer, "t1", tx -> {
                insertPayment(tx, 1);
                executor.run(inner, "t1", innerTx -> insertPayment(innerTx, 2));
                throw new IllegalStateException("outer callback failed");
            }));
        });

        assertEquals(1, db.payments(callersOwn, "t1"));
        assertEquals(0, db.keyRows(outer, "t1"));
        assertEquals(0, db.keyRows(inner, "t1"));
        assertEquals(0, db.payments(outer, "t1"));
        assertEquals(0, db.payments(inner, "t1"));
    }

    @Test
    void aCallerTransactionThatReturnsAnAutoCommitConnectionIsRefusedAndNothingRuns() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        String key = newKey();
        AtomicBoolean ran = new AtomicBoolean();

        try (Connection autoCommit = db.schema.dataSource().getConnection()) {
            caller.connection.set(autoCommit);
            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> executor.run(key, "t1", tx -> ran.getAndSet(true)));
            assertTrue(refused.getMessage().contains("auto-commit mode"), refused.getMessage());
        } finally {
            caller.connection.remove();
        }
        assertFalse(ran.get());
        assertEquals(0, db.keyRows(key, "t1"));
    }

    @Test
    void aCallersTransactionAbortedByACaughtErrorIsNamedAndNothingRuns() throws Exception {
        PostgresIdempotentExecutor executor = joining(() -> { });
        String key = newKey();
        AtomicBoolean ran = new AtomicBoolean();

        IllegalStateException refused = caller.inTransaction(false, connection -> {
            try (var statement = connection.createStatement()) {
                statement.execute("SELECT 1 / 0");
            } catch (SQLException expected) {
                // caught and ignored by the caller: PostgreSQL has aborted its transaction
            }
            return assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> ran.getAndSet(true)));
        });

        assertTrue(refused.getMessage().contains("aborted by an earlier error"), refused.getMessage());
        assertFalse(ran.get());
        assertEquals(0, db.keyRows(key, "t1"));
    }

    @Test
    void joiningNeedsAnExecutorBuiltOnADataSource() {
        PostgresIdempotentExecutor.Builder onJdbi = PostgresIdempotentExecutor.builder(Jdbi.create(db.schema.dataSource()))
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build())
                .joinCallerTransactions(caller);

        IllegalStateException refused = assertThrows(IllegalStateException.class, onJdbi::build);

        assertTrue(refused.getMessage().contains("builder(DataSource)"), refused.getMessage());
    }

    private static boolean isClosed(Connection connection) {
        try {
            return connection.isClosed();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}

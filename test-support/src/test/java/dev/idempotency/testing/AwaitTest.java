package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The waits return once what they wait for is so, and fail naming what never happened. */
@Timeout(60)
class AwaitTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE)
            .afterMigration("CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL)")
            .afterMigration("INSERT INTO account VALUES (1, 0)").build();

    @Test
    void untilFailsAfterItsTimeoutNamingWhatNeverHappened() {
        AssertionError e = assertThrows(AssertionError.class, () -> Await.until("the moon turning blue", Duration.ofMillis(100),
                () -> false));
        assertTrue(e.getMessage().contains("the moon turning blue"), e.getMessage());
    }

    @Test
    void untilFailsWithTheConditionsOwnException() {
        AssertionError e = assertThrows(AssertionError.class, () -> Await.until("a query", () -> {
            throw new SQLException("relation does not exist");
        }));
        assertTrue(e.getMessage().contains("relation does not exist"), e.getMessage());
    }

    @Test
    void theLockProbesReturnOnceAnUpdateWaitsOnTheRowAnotherTransactionLocked() throws Exception {
        try (Connection holder = db.dataSource().getConnection(); Connection waiter = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            execute(holder, "SELECT * FROM account WHERE id = 1 FOR UPDATE");
            int waiterPid = pid(waiter);
            CompletableFuture<Void> update = CompletableFuture.runAsync(() -> {
                try {
                    execute(waiter, "UPDATE " + db.name() + ".account SET balance = balance + 1 WHERE id = 1");
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });

            LockWaits.awaitBackend(db.dataSource(), waiterPid);
            LockWaits.awaitStatements(db.dataSource(), db.name() + ".account SET", 1);
            assertFalse(update.isDone(), "the update waits for the holder's commit");
            holder.commit();
            update.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void threadWaitingInReturnsOnceTheNamedThreadIsParkedInTheMethod() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread parked = new Thread(() -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "await-test-parked");
        parked.start();
        try {
            Await.threadWaitingIn("await-test-parked", CountDownLatch.class.getName(), "await");
            assertEquals(Thread.State.WAITING, parked.getState());
        } finally {
            release.countDown();
            parked.join(10_000);
        }
    }

    private static void execute(Connection connection, String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private static int pid(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement(); ResultSet rows = statement.executeQuery("SELECT pg_backend_pid()")) {
            rows.next();
            return rows.getInt(1);
        }
    }
}

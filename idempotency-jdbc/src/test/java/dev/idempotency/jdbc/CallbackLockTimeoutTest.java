package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.TransientFailureException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Only a wait on the key itself is "in progress" (409); a lock the callback cannot get on its own
 * rows is a transient failure (503) whose retry runs the callback again.
 */
@Timeout(60)
class CallbackLockTimeoutTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(6);
    private static PostgresIdempotentExecutor executor;
    private static ExecutorService threads;

    @BeforeAll
    static void setUp() {
        db.schema.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL); "
                + "INSERT INTO accounts VALUES (1, 100)");
        executor = db.executor(c -> c.waitBudget(Duration.ofMillis(300)));
        threads = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        threads.shutdownNow();
    }

    @Test
    void aNowaitLockFailureInTheCallbackIsTransientAndStoresNothing() {
        String key = newKey();
        try (Handle other = lockAccount()) {
            TransientFailureException e = assertThrows(TransientFailureException.class, () -> executor.run(key, "t1",
                    tx -> tx.handle().createQuery("SELECT balance FROM accounts WHERE id = 1 FOR UPDATE NOWAIT")
                            .mapTo(Long.class).one()));

            assertEquals("55P03", e.sqlState());
            assertTrue(e.getMessage().contains("503"), e.getMessage());
            assertEquals(0, db.keyRows(key, "t1"));
            other.rollback();
        }
        assertFalse(executor.run(key, "t1", tx -> "ran").replayed());
    }

    @Test
    void aLockTimeoutInTheCallbackIsTransientNotInProgress() {
        String key = newKey();
        try (Handle other = lockAccount()) {
            TransientFailureException e = assertThrows(TransientFailureException.class, () -> executor.run(key, "t1", tx -> {
                tx.handle().execute("SET LOCAL lock_timeout = '100ms'");
                return tx.handle().createUpdate("UPDATE accounts SET balance = balance - 1 WHERE id = 1").execute();
            }));

            assertEquals("55P03", e.sqlState());
            assertEquals(0, db.keyRows(key, "t1"));
            other.rollback();
        }
    }

    @Test
    void aClaimWaitingOnTheKeyPastTheWaitBudgetIsStillInProgress() throws Exception {
        String key = newKey();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<?> first = threads.submit(() -> executor.run(key, "t1", tx -> {
            inside.countDown();
            release.await();
            return "first";
        }));
        assertTrue(inside.await(30, TimeUnit.SECONDS));

        KeyInProgressException e = assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> "second"));

        assertTrue(e.getMessage().contains("409"), e.getMessage());
        release.countDown();
        first.get(30, TimeUnit.SECONDS);
        assertEquals("first", executor.run(key, "t1", tx -> "never").result());
    }

    /** Another connection's transaction holding account 1's row lock; roll it back or close it. */
    private static Handle lockAccount() {
        Handle other = db.jdbi.open();
        other.begin();
        other.createQuery("SELECT balance FROM accounts WHERE id = 1 FOR UPDATE").mapTo(Long.class).one();
        return other;
    }
}

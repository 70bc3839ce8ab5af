package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.testing.LockWaits;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A call's claim opens its transaction with its own BEGIN, in autocommit, before Jdbi and the pool
 * know of it: whichever way the claim fails, the connection goes back to the pool outside any
 * transaction, so the next borrower's statements never run (or commit) inside what the claim opened.
 * Each test runs the executor on a pool of one connection, so the next call gets that same connection.
 */
@Timeout(60)
class TransactionOpenedByClaimTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    private static ExecutorService threads;

    @BeforeAll
    static void setUp() {
        threads = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        threads.shutdownNow();
    }

    @Test
    void aClaimThatWaitedPastTheBudgetLeavesItsConnectionIdleAndTheNextCallCommits() throws Exception {
        try (HikariDataSource pool = db.schema.newPool(1)) {
            PostgresIdempotentExecutor executor = executorOn(pool, db.schema.name(), Duration.ofMillis(300));
            executor.run(newKey(), "t1", tx -> insertPayment(tx, 1));
            int pid = backendPid(pool);
            String key = newKey();
            CountDownLatch release = new CountDownLatch(1);
            Future<Outcome<Long>> first = holdUntil(key, release);
            try {
                assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> insertPayment(tx, 3)));
                assertEquals("idle", backendState(pid));
            } finally {
                release.countDown();
            }
            assertFalse(first.get(10, TimeUnit.SECONDS).replayed());

            assertTheNextCallCommitsOn(executor, pool, pid);
            assertEquals(1, db.payments(key, "t1"));
        }
    }

    @Test
    void aClaimOnAnUnmigratedSchemaLeavesItsConnectionIdle() throws Exception {
        try (HikariDataSource pool = db.schema.newPool(1)) {
            int pid = backendPid(pool);
            PostgresIdempotentExecutor unmigrated = executorOn(pool, "no_such_schema", Duration.ofSeconds(1));

            assertThrows(SchemaNotMigratedException.class, () -> unmigrated.run(newKey(), "t1", tx -> "never"));

            assertEquals("idle", backendState(pid));
            assertTheNextCallCommitsOn(executorOn(pool, db.schema.name(), Duration.ofSeconds(1)), pool, pid);
        }
    }

    /** Its own rollback cannot reach PostgreSQL then; the connection is closed, and the pool replaces it. */
    @Test
    void aClaimWhoseConnectionIsKilledWhileItWaitsLeavesThePoolAWorkingConnection() throws Exception {
        try (HikariDataSource pool = db.schema.newPool(1)) {
            PostgresIdempotentExecutor executor = executorOn(pool, db.schema.name(), Duration.ofSeconds(20));
            executor.run(newKey(), "t1", tx -> insertPayment(tx, 1));
            int pid = backendPid(pool);
            String key = newKey();
            CountDownLatch release = new CountDownLatch(1);
            Future<Outcome<Long>> first = holdUntil(key, release);
            try {
                Future<?> duplicate = threads.submit(() -> executor.run(key, "t1", tx -> insertPayment(tx, 3)));
                LockWaits.awaitBackend(db.schema.dataSource(), pid);
                db.jdbi.useHandle(admin -> admin.createQuery("SELECT pg_terminate_backend(:pid)").bind("pid", pid)
                        .mapTo(Boolean.class).one());
                assertThrows(Exception.class, () -> duplicate.get(10, TimeUnit.SECONDS));
            } finally {
                release.countDown();
            }
            assertFalse(first.get(10, TimeUnit.SECONDS).replayed());

            String next = newKey();
            assertFalse(executor.run(next, "t1", tx -> insertPayment(tx, 4)).replayed());
            assertEquals("completed", db.keyRow(next, "t1").get("status"));
            assertNotEquals(pid, backendPid(pool));
            assertEquals(1, db.payments(key, "t1"));
        }
    }

    /**
     * A first call of {@code key} by another executor (so that a duplicate waits on PostgreSQL's row
     * lock, not in this process), whose callback holds the key row uncommitted until {@code release}.
     */
    private static Future<Outcome<Long>> holdUntil(String key, CountDownLatch release) throws InterruptedException {
        CountDownLatch claimed = new CountDownLatch(1);
        PostgresIdempotentExecutor holder = db.executor();
        Future<Outcome<Long>> first = threads.submit(() -> holder.run(key, "t1", tx -> {
            claimed.countDown();
            assertTrue(release.await(20, TimeUnit.SECONDS));
            return insertPayment(tx, 2);
        }));
        assertTrue(claimed.await(10, TimeUnit.SECONDS));
        return first;
    }

    private static PostgresIdempotentExecutor executorOn(HikariDataSource pool, String schema, Duration waitBudget) {
        return PostgresIdempotentExecutor.builder(pool)
                .config(IdempotencyConfig.builder().schema(schema).waitBudget(waitBudget).build()).build();
    }

    /** The next call takes the same connection and what it stores is there for every other one. */
    private static void assertTheNextCallCommitsOn(PostgresIdempotentExecutor executor, HikariDataSource pool, int pid)
            throws SQLException {
        String next = newKey();
        assertFalse(executor.run(next, "t1", tx -> insertPayment(tx, 4)).replayed());
        assertEquals("completed", db.keyRow(next, "t1").get("status"));
        assertEquals("idle", backendState(pid));
        assertEquals(pid, backendPid(pool));
    }

    private static int backendPid(HikariDataSource pool) throws SQLException {
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
             ResultSet row = statement.executeQuery("SELECT pg_backend_pid()")) {
            row.next();
            return row.getInt(1);
        }
    }

    /** pg_stat_activity's state: idle, or idle in transaction (aborted) for one left open. */
    private static String backendState(int pid) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT state FROM pg_stat_activity WHERE pid = :pid")
                .bind("pid", pid).mapTo(String.class).one());
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.TransientFailureException;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Database failures reach the caller as one retryable error, and a retry with the same key is safe. */
@Timeout(60)
class DatabaseFailureTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(6);
    private static ExecutorService threads;

    @BeforeAll
    static void setUp() {
        db.schema.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL); "
                + "INSERT INTO accounts VALUES (1, 100), (2, 100)");
        threads = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        threads.shutdownNow();
    }

    @Test
    void aDeadlockBetweenTwoCallbacksReachesOneCallerAsRetryableAndItsRetrySucceeds() throws Exception {
        PostgresIdempotentExecutor executor = db.executor();
        String first = newKey();
        String second = newKey();
        CyclicBarrier bothLockedTheirFirstRow = new CyclicBarrier(2);

        Future<Outcome<String>> a = threads.submit(() -> executor.run(first, "t1", tx -> transfer(tx, 1, 2, bothLockedTheirFirstRow)));
        Future<Outcome<String>> b = threads.submit(() -> executor.run(second, "t1", tx -> transfer(tx, 2, 1, bothLockedTheirFirstRow)));

        List<TransientFailureException> failures = new ArrayList<>();
        List<String> losers = new ArrayList<>();
        for (var entry : List.of(java.util.Map.entry(first, a), java.util.Map.entry(second, b))) {
            try {
                entry.getValue().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertTrue(e.getCause() instanceof TransientFailureException, String.valueOf(e.getCause()));
                failures.add((TransientFailureException) e.getCause());
                losers.add(entry.getKey());
            }
        }
        assertEquals(1, failures.size(), "exactly one transaction is chosen as the deadlock victim");
        assertEquals("40P01", failures.get(0).sqlState());
        assertTrue(failures.get(0).getMessage().contains("503"), failures.get(0).getMessage());
        assertEquals(0, db.keyRows(losers.get(0), "t1"), "the victim's key was rolled back with it");

        Outcome<String> retry = executor.run(losers.get(0), "t1", tx -> transfer(tx, 1, 2, null));
        assertFalse(retry.replayed());
    }

    @Test
    void anExhaustedPoolFailsWithARetryableErrorInsteadOfHanging() throws Exception {
        HikariConfig settings = new HikariConfig();
        try (HikariDataSource template = db.schema.newPool(1)) {
            template.copyStateTo(settings);
        }
        settings.setPoolName("tiny-" + System.nanoTime());
        settings.setConnectionTimeout(500); // HikariCP reads this when the pool starts
        try (HikariDataSource tinyPool = new HikariDataSource(settings)) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(tinyPool)
                    .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();
            String key = newKey();
            try (Connection taken = tinyPool.getConnection()) {
                TransientFailureException e = assertThrows(TransientFailureException.class,
                        () -> executor.run(key, "t1", tx -> "never"));
                assertTrue(e.getMessage().contains("Retry with the same key"), e.getMessage());
            }
            assertEquals("ran", executor.run(key, "t1", tx -> "ran").result());
        }
    }

    @Test
    void aCallbackWhoseConnectionIsKilledFailsRetryablyAndTheRetryAppliesItsEffectOnce() throws Exception {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch killed = new CountDownLatch(1);

        TransientFailureException e = assertThrows(TransientFailureException.class, () -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            insertPayment(tx, 10);
            int pid = tx.handle().createQuery("SELECT pg_backend_pid()").mapTo(Integer.class).one();
            db.jdbi.useHandle(admin -> admin.createQuery("SELECT pg_terminate_backend(:pid)").bind("pid", pid)
                    .mapTo(Boolean.class).one());
            killed.countDown();
            insertPayment(tx, 10); // on a dead connection
            return "never";
        }));
        assertTrue(killed.await(1, TimeUnit.SECONDS));
        assertTrue(e.sqlState() == null || e.sqlState().startsWith("08") || e.sqlState().equals("57P01"), e.sqlState());

        Outcome<String> retry = executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            return "paid-" + insertPayment(tx, 10);
        });
        assertFalse(retry.replayed());
        assertEquals(2, runs.get());
        assertEquals(1, db.payments(key, "t1"));
    }

    private static String transfer(PostgresTransaction tx, int from, int to, CyclicBarrier barrier) throws Exception {
        tx.handle().createUpdate("UPDATE accounts SET balance = balance - 1 WHERE id = :id").bind("id", from).execute();
        if (barrier != null) {
            barrier.await(10, TimeUnit.SECONDS);
        }
        tx.handle().createUpdate("UPDATE accounts SET balance = balance + 1 WHERE id = :id").bind("id", to).execute();
        return "moved";
    }
}

package dev.idempotency.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.LockWaits;
import dev.idempotency.testing.MigratedSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The executor inside Spring's transactions (DataSourceTransactionManager, TransactionTemplate,
 * JdbcTemplate on one HikariCP pool), against the real PostgreSQL: the caller's JdbcTemplate writes
 * and the executor's key, result and outbox events commit or roll back together.
 */
@Timeout(60)
class SpringTransactionJoinTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).poolSize(20)
            .afterMigration("CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                    + "tenant_id text NOT NULL, request_key text NOT NULL, amount bigint NOT NULL)")
            .build();

    private static DataSource dataSource;
    private static JdbcTemplate jdbc;
    private static TransactionTemplate transactions;

    @BeforeAll
    static void spring() {
        dataSource = db.dataSource();
        jdbc = new JdbcTemplate(dataSource);
        transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    @Test
    void theCallersJdbcTemplateWritesAndTheKeyResultAndEventCommitTogether() {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = joining(config -> { }, signals::incrementAndGet);
        String key = newKey();

        Outcome<String> outcome = transactions.execute(status -> {
            jdbc.update("INSERT INTO payments (tenant_id, request_key, amount) VALUES (?, ?, ?)", "t1", key, 500);
            Outcome<String> run = executor.run(key, "t1", tx -> {
                tx.outbox().publish("payments", key, Map.of("amount", 500));
                return "paid";
            });
            // Seen from another connection, nothing of it is committed yet, and the relay was not woken.
            assertEquals(0, keyRowsElsewhere("t1", key));
            assertEquals(0, signals.get());
            return run;
        });

        assertEquals("paid", outcome.result());
        assertFalse(outcome.replayed());
        assertEquals(1, payments(key, "t1"));
        assertEquals("completed", keyStatus("t1", key));
        assertEquals(1, events(key, "t1"));
        assertEquals(1, signals.get(), "the after-outbox-commit listener runs once, after the caller's commit");
    }

    @Test
    void rollingBackTheCallersTransactionLeavesNoKeyResultEventOrRowAndARetryRunsAgain() {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = joining(config -> { }, signals::incrementAndGet);
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();

        transactions.executeWithoutResult(status -> {
            executor.run(key, "t1", tx -> {
                runs.incrementAndGet();
                jdbcInsertPayment(key, 700);
                tx.outbox().publish("payments", key, Map.of("amount", 700));
                return "paid";
            });
            status.setRollbackOnly(); // e.g. a later step of the caller's service failed
        });

        assertEquals(0, keyRows(key, "t1"));
        assertEquals(0, payments(key, "t1"));
        assertEquals(0, events(key, "t1"));
        assertEquals(0, signals.get());

        Outcome<String> retry = transactions.execute(status -> executor.run(key, "t1", tx -> {
            runs.incrementAndGet();
            jdbcInsertPayment(key, 700);
            return "paid again";
        }));
        assertFalse(retry.replayed());
        assertEquals("paid again", retry.result());
        assertEquals(2, runs.get());
        assertEquals(1, payments(key, "t1"));
    }

    @Test
    void aCallbackUpdatingTheRowTheCallerInsertedSeesItAndCompletesAtOnce() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();

        int updated = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> transactions.execute(status -> {
            jdbcInsertPayment(key, 100);
            return executor.run(key, "t1", tx -> tx.handle()
                    .execute("UPDATE payments SET amount = 150 WHERE tenant_id = 't1' AND request_key = ?", key)).result();
        }));

        assertEquals(1, updated, "the callback runs on the caller's connection, so it sees the caller's uncommitted row");
        assertEquals(150L, jdbc.queryForObject("SELECT amount FROM payments WHERE request_key = ?", Long.class, key));
    }

    @Test
    void aCallbackUpdatingARowTheCallerLockedDoesNotWaitOnItself() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();
        jdbcInsertPayment(key, 100);

        // Today's own transaction on a second connection would wait on the caller's row lock without bound.
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> transactions.executeWithoutResult(status -> {
            jdbc.update("UPDATE payments SET amount = amount + 1 WHERE request_key = ?", key);
            executor.run(key, "t1", tx -> tx.handle().execute("UPDATE payments SET amount = amount + 10 WHERE request_key = ?", key));
        }));

        assertEquals(111L, jdbc.queryForObject("SELECT amount FROM payments WHERE request_key = ?", Long.class, key));
        assertEquals("completed", keyStatus("t1", key));
    }

    @Test
    void refuseModeThrowsAClearErrorInsideATransactionAndRunsNothing() {
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(dataSource).config(config(c -> { }))
                .refuseCallerTransactions(SpringCallerTransaction.builder(dataSource).build()).build();
        String key = newKey();
        AtomicBoolean ran = new AtomicBoolean();

        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> transactions.executeWithoutResult(
                status -> executor.run(key, "t1", tx -> ran.getAndSet(true))));

        assertTrue(refused.getMessage().contains("inside a transaction the caller has open"), refused.getMessage());
        assertTrue(refused.getMessage().contains("joinCallerTransactions"), refused.getMessage());
        assertTrue(refused.getMessage().contains("call it outside the transaction"), refused.getMessage());
        assertFalse(ran.get());
        assertEquals(0, keyRows(key, "t1"));

        // Outside any transaction it runs in its own, as before.
        assertFalse(executor.run(key, "t1", tx -> ran.getAndSet(true)).replayed());
        assertTrue(ran.get());
        assertEquals("completed", keyStatus("t1", key));
    }

    @Test
    void withoutACallersTransactionJoinModeRunsInItsOwn() {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = joining(config -> { }, signals::incrementAndGet);
        String key = newKey();

        executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", key, Map.of("amount", 1));
            return "own";
        });

        assertEquals("completed", keyStatus("t1", key));
        assertEquals(1, events(key, "t1"));
        assertEquals(1, signals.get());
    }

    @Test
    void concurrentCallersInTheirOwnTransactionsRunTheCallbackOnceAndReplayAfterTheFirstCommits() throws Exception {
        PostgresIdempotentExecutor executor = joining(config -> config.waitBudget(Duration.ofSeconds(20)), () -> { });
        String key = newKey();
        int callers = 16;
        AtomicInteger runs = new AtomicInteger();
        AtomicLong firstCommitStartedAt = new AtomicLong(Long.MAX_VALUE);
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            List<Future<long[]>> results = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return transactions.execute(status -> {
                        Outcome<String> outcome = executor.run(key, "t1", tx -> {
                            runs.incrementAndGet();
                            jdbcInsertPayment(key, 900);
                            tx.outbox().publish("payments", key, Map.of("amount", 900));
                            return "paid";
                        });
                        if (!outcome.replayed()) {
                            // The first caller's transaction goes on after run(); the others wait on the key row for its commit.
                            LockWaits.awaitStatements(db.dataSource(), "\"" + db.name() + "\".idempotency_keys", callers - 1);
                            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                                @Override
                                public void beforeCommit(boolean readOnly) {
                                    firstCommitStartedAt.set(System.nanoTime());
                                }
                            });
                        }
                        assertEquals("paid", outcome.result());
                        return new long[] {outcome.replayed() ? 1 : 0, System.nanoTime()};
                    });
                }));
            }
            start.countDown();
            int replays = 0;
            List<Long> replayedAt = new ArrayList<>();
            for (Future<long[]> result : results) {
                long[] r = result.get(30, TimeUnit.SECONDS);
                if (r[0] == 1) {
                    replays++;
                    replayedAt.add(r[1]);
                }
            }
            assertEquals(1, runs.get());
            assertEquals(callers - 1, replays);
            for (long at : replayedAt) {
                assertTrue(at > firstCommitStartedAt.get(), "a replay returned before the first caller committed");
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, payments(key, "t1"));
        assertEquals(1, events(key, "t1"));
    }

    @Test
    void aDuplicatePastTheWaitBudgetGetsInProgressAndItsTransactionStaysUsable() throws Exception {
        PostgresIdempotentExecutor executor = joining(config -> config.waitBudget(Duration.ofMillis(200)), () -> { });
        String key = newKey();
        String other = newKey();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService first = Executors.newSingleThreadExecutor();
        try {
            Future<?> holder = first.submit(() -> transactions.executeWithoutResult(status -> {
                executor.run(key, "t1", tx -> "first");
                claimed.countDown();
                await(release);
            }));
            assertTrue(claimed.await(10, TimeUnit.SECONDS));

            transactions.executeWithoutResult(status -> {
                assertThrows(KeyInProgressException.class, () -> executor.run(key, "t1", tx -> "second"));
                // Rolled back to the savepoint before the claim: the caller's transaction goes on.
                jdbcInsertPayment(other, 1);
                assertEquals("0", jdbc.queryForObject("SHOW lock_timeout", String.class));
            });
            release.countDown();
            holder.get(10, TimeUnit.SECONDS);
        } finally {
            release.countDown();
            first.shutdownNow();
        }
        assertEquals(1, payments(other, "t1"));
        assertEquals("completed", keyStatus("t1", key));
    }

    @Test
    void aReplayInsideTheCallersTransactionWritesNothingAndLeavesItsLockTimeout() {
        PostgresIdempotentExecutor executor = joining(config -> config.waitBudget(Duration.ofMillis(1500)), () -> { });
        String key = newKey();
        executor.run(key, "t1", tx -> "first");

        transactions.executeWithoutResult(status -> {
            jdbc.execute("SET LOCAL lock_timeout = '7s'");
            Outcome<String> replay = executor.run(key, "t1", tx -> "never");
            assertTrue(replay.replayed());
            assertEquals("first", replay.result());
            assertEquals("7s", jdbc.queryForObject("SHOW lock_timeout", String.class));
        });
    }

    @Test
    void aCallbacksExceptionCaughtByACallerWhoCommitsAnywayLeavesNoKeyAndNoneOfItsWrites() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();
        String callersOwn = newKey();

        transactions.executeWithoutResult(status -> {
            jdbcInsertPayment(callersOwn, 1);
            IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> executor.run(key, "t1", tx -> {
                jdbcInsertPayment(key, 2);
                tx.outbox().publish("payments", key, Map.of("amount", 2));
                throw new IllegalStateException("the callback failed");
            }));
            assertEquals("the callback failed", thrown.getMessage());
        });

        assertEquals(1, payments(callersOwn, "t1"), "the caller's own write before run() committed");
        assertEquals(0, keyRows(key, "t1"));
        assertEquals(0, payments(key, "t1"));
        assertEquals(0, events(key, "t1"));
    }

    @Test
    void aBusinessFailureIsStoredWhenTheCallerCommitsAndReplayed() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();

        transactions.executeWithoutResult(status -> {
            BusinessFailure failure = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
                runs.incrementAndGet();
                jdbcInsertPayment(key, 3);
                tx.outbox().publish("payments", key, Map.of("amount", 3));
                throw new BusinessFailure("card_declined", "The card was declined.");
            }));
            assertFalse(failure.replayed());
        });

        assertEquals("failed", keyStatus("t1", key));
        assertEquals(0, payments(key, "t1"), "the callback's writes roll back to the savepoint before it");
        assertEquals(0, events(key, "t1"));
        BusinessFailure replayed = assertThrows(BusinessFailure.class, () -> transactions.executeWithoutResult(
                status -> executor.run(key, "t1", tx -> runs.incrementAndGet())));
        assertTrue(replayed.replayed());
        assertEquals("card_declined", replayed.code());
        assertEquals(1, runs.get());
    }

    @Test
    void aBusinessFailureInATransactionTheCallerRollsBackIsNotStored() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();

        transactions.executeWithoutResult(status -> {
            assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", tx -> {
                throw new BusinessFailure("card_declined", "The card was declined.");
            }));
            status.setRollbackOnly();
        });

        assertEquals(0, keyRows(key, "t1"));
    }

    @Test
    void leaseModeRefusesToRunInsideTheCallersTransaction() {
        PostgresIdempotentExecutor executor = joining(config -> { }, () -> { });
        String key = newKey();
        AtomicBoolean ran = new AtomicBoolean();

        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> transactions.executeWithoutResult(
                status -> executor.runWithLease(
                        LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                        leased -> ran.getAndSet(true), (tx, external) -> "done")));

        assertTrue(refused.getMessage().contains("Call it outside the transaction"), refused.getMessage());
        assertFalse(ran.get());
        assertEquals(0, keyRows(key, "t1"));
    }

    private static PostgresIdempotentExecutor joining(Consumer<IdempotencyConfig.Builder> settings, Runnable afterOutboxCommit) {
        return PostgresIdempotentExecutor.builder(dataSource).config(config(settings))
                .afterOutboxCommit(afterOutboxCommit)
                .joinCallerTransactions(SpringCallerTransaction.builder(dataSource).build())
                .build();
    }

    private static IdempotencyConfig config(Consumer<IdempotencyConfig.Builder> settings) {
        IdempotencyConfig.Builder config = IdempotencyConfig.builder().schema(db.name());
        settings.accept(config);
        return config.build();
    }

    private static String newKey() {
        return "key-" + UUID.randomUUID();
    }

    /** The business write, with the application's own tool: JdbcTemplate, in whatever transaction Spring has open. */
    private static void jdbcInsertPayment(String key, long amount) {
        jdbc.update("INSERT INTO payments (tenant_id, request_key, amount) VALUES ('t1', ?, ?)", key, amount);
    }

    private static long payments(String key, String tenant) {
        return jdbc.queryForObject("SELECT count(*) FROM payments WHERE tenant_id = ? AND request_key = ?", Long.class, tenant, key);
    }

    private static long events(String key, String tenant) {
        return jdbc.queryForObject("SELECT count(*) FROM outbox_events WHERE tenant_id = ? AND partition_key = ?", Long.class,
                tenant, key);
    }

    private static long keyRows(String key, String tenant) {
        return jdbc.queryForObject("SELECT count(*) FROM idempotency_keys WHERE tenant_id = ? AND idempotency_key = ?",
                Long.class, tenant, key);
    }

    /** Counted on a connection of its own, outside whatever transaction this thread has open. */
    private static long keyRowsElsewhere(String tenant, String key) {
        try (var connection = db.dataSource().getConnection();
             var statement = connection.prepareStatement(
                     "SELECT count(*) FROM idempotency_keys WHERE tenant_id = ? AND idempotency_key = ?")) {
            statement.setString(1, tenant);
            statement.setString(2, key);
            try (var rows = statement.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String keyStatus(String tenant, String key) {
        return jdbc.queryForObject("SELECT status FROM idempotency_keys WHERE tenant_id = ? AND idempotency_key = ?",
                String.class, tenant, key);
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(20, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

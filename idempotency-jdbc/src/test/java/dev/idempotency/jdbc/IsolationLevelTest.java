package dev.idempotency.jdbc;

import dev.idempotency.core.LeaseRequest;
import static dev.idempotency.jdbc.ExecutorFixture.awaitDuplicatesWaitingInProcess;
import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.TransientFailureException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A pool configured REPEATABLE READ or SERIALIZABLE is honoured: callbacks run at that level, and
 * concurrent duplicates still run the callback once: from other processes the losers get a retryable
 * failure whose retry replays; in the first call's process they replay its outcome.
 */
@Timeout(120)
class IsolationLevelTest {
    private static final int DUPLICATES = 8;

    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(2);
    private static final Map<String, HikariDataSource> pools = new HashMap<>();
    private static ExecutorService threads;

    @BeforeAll
    static void setUp() {
        threads = Executors.newFixedThreadPool(DUPLICATES);
    }

    @AfterAll
    static void tearDown() {
        threads.shutdownNow();
        pools.values().forEach(HikariDataSource::close);
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void theCallbackRunsAtThePoolsIsolationLevelAndASequentialRepeatReplays(String level) {
        PostgresIdempotentExecutor executor = executorAt(level);
        String key = newKey();

        Outcome<String> first = executor.run(key, "t1", tx -> {
            insertPayment(tx, 5);
            return tx.handle().createQuery("SHOW transaction_isolation").mapTo(String.class).one();
        });
        Outcome<String> repeat = executor.run(key, "t1", tx -> "never");

        assertEquals(level.equals("TRANSACTION_SERIALIZABLE") ? "serializable" : "repeatable read", first.result());
        assertFalse(first.replayed());
        assertTrue(repeat.replayed());
        assertEquals(first.result(), repeat.result());
        assertEquals(1, db.payments(key, "t1"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void concurrentDuplicatesFromSeveralProcessesRunTheCallbackOnceAndTheLosersRetryIntoAReplay(String level) throws Exception {
        PostgresIdempotentExecutor executor = executorAt(level);
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(DUPLICATES);
        List<Future<Outcome<Long>>> calls = new ArrayList<>();
        for (int i = 0; i < DUPLICATES; i++) {
            // An executor each, as in as many processes: they meet on the key row in PostgreSQL.
            PostgresIdempotentExecutor process = executorAt(level);
            calls.add(threads.submit(() -> {
                start.await();
                return process.run(key, "t1", Long.class, tx -> {
                    runs.incrementAndGet();
                    long id = insertPayment(tx, 7);
                    db.awaitCallersWaitingOnAKeyRow(DUPLICATES - 1); // the others queue on this caller's key row
                    return id;
                });
            }));
        }

        List<Long> results = new ArrayList<>();
        int transientFailures = 0;
        for (Future<Outcome<Long>> call : calls) {
            try {
                results.add(call.get(60, TimeUnit.SECONDS).result());
            } catch (ExecutionException e) {
                assertTrue(e.getCause() instanceof TransientFailureException, String.valueOf(e.getCause()));
                assertEquals("40001", ((TransientFailureException) e.getCause()).sqlState());
                transientFailures++;
                Outcome<Long> retry = executor.run(key, "t1", Long.class, tx -> {
                    runs.incrementAndGet();
                    return -1L;
                });
                assertTrue(retry.replayed());
                results.add(retry.result());
            }
        }

        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(DUPLICATES, results.size());
        assertEquals(1, results.stream().distinct().count(), String.valueOf(results));
        assertTrue(transientFailures >= 1, "the duplicates that waited on the first caller's row cannot see its commit");
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void concurrentDuplicatesInOneProcessReplayTheFirstCallsOutcomeWithoutARetry(String level) throws Exception {
        PostgresIdempotentExecutor executor = executorAt(level);
        String key = newKey();
        AtomicInteger runs = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(DUPLICATES);
        List<Future<Outcome<Long>>> calls = new ArrayList<>();
        for (int i = 0; i < DUPLICATES; i++) {
            calls.add(threads.submit(() -> {
                start.await();
                return executor.run(key, "t1", Long.class, tx -> {
                    runs.incrementAndGet();
                    long id = insertPayment(tx, 7);
                    awaitDuplicatesWaitingInProcess(DUPLICATES - 1); // the others wait here for this call
                    return id;
                });
            }));
        }

        List<Outcome<Long>> outcomes = new ArrayList<>();
        for (Future<Outcome<Long>> call : calls) {
            outcomes.add(call.get(60, TimeUnit.SECONDS));
        }

        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(1, outcomes.stream().filter(o -> !o.replayed()).count(), String.valueOf(outcomes));
        assertEquals(1, outcomes.stream().map(Outcome::result).distinct().count(), String.valueOf(outcomes));
    }

    @ParameterizedTest
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void anExpiredKeyIsReclaimedAndLeaseModeCompletesAtThatLevel(String level) {
        PostgresIdempotentExecutor executor = executorAt(level);
        String key = newKey();
        executor.run(key, "t1", tx -> "old");
        db.jdbi.useHandle(h -> h.createUpdate("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' "
                + "WHERE idempotency_key = :k").bind("k", key).execute());
        String leased = newKey();

        Outcome<String> again = executor.run(key, "t1", tx -> "new");
        Outcome<String> lease = executor.runWithLease(
                LeaseRequest.builder(leased, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                l -> "charged", (tx, s) -> s + "-" + tx.handle().createQuery("SHOW transaction_isolation").mapTo(String.class).one());
        Outcome<String> leaseReplay = executor.runWithLease(
                LeaseRequest.builder(leased, "t1").lease(Duration.ofSeconds(5)).resultType(String.class).build(),
                l -> "never", (tx, s) -> s);

        assertFalse(again.replayed());
        assertEquals("new", again.result());
        assertTrue(lease.result().startsWith("charged-"));
        assertFalse(lease.result().endsWith("read committed"), lease.result());
        assertTrue(leaseReplay.replayed());
        assertEquals(lease.result(), leaseReplay.result());
    }

    private static synchronized PostgresIdempotentExecutor executorAt(String level) {
        HikariDataSource pool = pools.computeIfAbsent(level, l -> {
            HikariConfig settings = new HikariConfig();
            try (HikariDataSource template = db.schema.newPool(1)) {
                template.copyStateTo(settings);
            }
            settings.setPoolName("isolation-" + l + "-" + System.nanoTime());
            settings.setTransactionIsolation(l);
            settings.setMaximumPoolSize(DUPLICATES + 2);
            return new HikariDataSource(settings);
        });
        return PostgresIdempotentExecutor.builder(pool)
                .config(IdempotencyConfig.builder().schema(db.schema.name()).waitBudget(Duration.ofSeconds(30)).build())
                .build();
    }
}

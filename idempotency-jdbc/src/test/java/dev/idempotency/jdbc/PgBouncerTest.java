package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.jdbc.internal.PoolerProbe;
import dev.idempotency.testing.PrivatePgBouncer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/** The executor behind a real PgBouncer in transaction pooling mode, the way production databases are often reached. */
class PgBouncerTest {
    private static final int THREADS = 8;
    private static final int KEYS_PER_THREAD = 200;

    @RegisterExtension
    static final ExecutorFixture fixture = new ExecutorFixture(4);
    private static PrivatePgBouncer bouncer;

    @BeforeAll
    static void start() {
        bouncer = PrivatePgBouncer.start(3);
    }

    @AfterAll
    static void stop() {
        if (bouncer != null) {
            bouncer.close();
        }
    }

    @Test
    void aPlainUrlIsRefusedAtTheFirstCallBeforeAnythingRunsWithAMessageNamingTheFix() {
        try (HikariDataSource pool = bouncer.pool(4, "")) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(config()).build();
            AtomicInteger ran = new AtomicInteger();
            for (int call = 0; call < 2; call++) {
                PoolerBreaksPreparedStatementsException e = assertThrows(PoolerBreaksPreparedStatementsException.class,
                        () -> executor.run("refused", "t", tx -> ran.incrementAndGet()));
                assertTrue(e.getMessage().contains("prepareThreshold=0"), e.getMessage());
                assertTrue(e.getMessage().contains("PgBouncer >= 1.21 with max_prepared_statements"), e.getMessage());
            }
            assertEquals(0, ran.get(), "the callback never ran");
            assertEquals(0, fixture.keyRows("refused", "t"));
        }
    }

    @Test
    void checkingThePoolerAtStartupRefusesAPlainUrlBeforeAnyCall() {
        try (HikariDataSource pool = bouncer.pool(4, "")) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(config()).build();
            PoolerBreaksPreparedStatementsException e = assertThrows(PoolerBreaksPreparedStatementsException.class,
                    executor::checkConnectionPooler);
            assertTrue(e.getMessage().contains("prepareThreshold=0"), e.getMessage());
            assertThrows(PoolerBreaksPreparedStatementsException.class, () -> executor.run("startup", "t", tx -> 1));
            assertEquals(0, fixture.keyRows("startup", "t"));
        }
        try (HikariDataSource pool = bouncer.pool(4, "prepareThreshold=0")) {
            PostgresIdempotentExecutor.builder(pool).config(config()).build().checkConnectionPooler();
        }
    }

    @Test
    void withPrepareThresholdZeroEveryCallRunsOnceAndCommitsExactly() throws Exception {
        try (HikariDataSource pool = bouncer.pool(THREADS, "prepareThreshold=0")) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(config()).build();
            runLoad(executor, "unnamed").assertEveryCallCommittedOnce(bouncer);
        }
    }

    /**
     * The pool passes the check at the first call (prepareThreshold=0) and then hands out plain connections,
     * as if the pooler changed under a running executor: calls fail, with the fix named, and none
     * reports an outcome that did not commit. Here every client of the pooler is an executor, whose
     * ROLLBACK and separate COMMIT are never named (the COMMIT that the first call let travel with the
     * completion is named with it once the connections name statements, which this load covers too);
     * a named ROLLBACK of some other application could still end a transaction
     * under one of our named statements, which is why the first call refuses.
     */
    @Test
    void behindAPoolerThatMixesUpStatementsNoCallReportsAnOutcomeThatDidNotCommit() throws Exception {
        try (HikariDataSource unnamed = bouncer.pool(2, "prepareThreshold=0");
             HikariDataSource plain = bouncer.pool(THREADS, "")) {
            SwitchingDataSource pool = new SwitchingDataSource(unnamed);
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(config()).build();
            assertEquals("checked", executor.run("first", "t", tx -> "checked").result());
            pool.switchTo(plain);
            Logged<Load> logged = logged(PostgresIdempotentExecutor.class, Level.ERROR, () -> runLoad(executor, "mixed"));
            Load load = logged.result();
            List<String> poolerErrors = logged.messages().stream()
                    .filter(message -> message.contains("connection pooler")).toList();
            assertEquals(1, poolerErrors.size(), "logged once: " + poolerErrors);
            assertTrue(poolerErrors.get(0).contains("prepareThreshold=0"), poolerErrors.get(0));
            System.out.println("plain connections through pgbouncer: " + load.summary());
            assertTrue(load.returned.size() > THREADS * KEYS_PER_THREAD / 4, "most calls still ran: " + load.summary());
            assertTrue(!load.errors.isEmpty(), "the pooler did mix up statements: " + load.summary());
            assertEquals(List.of(), load.uncommittedOutcomes, load.summary());
            load.errors.keySet().forEach(error -> assertTrue(error.startsWith("PoolerBreaksPreparedStatementsException")
                    || error.startsWith("IllegalStateException"), load.summary()));
        }
    }

    @Test
    void theProbeLetsThroughDirectConnectionsUnnamedStatementsAndSessionPooling() throws Exception {
        try (HikariDataSource unnamed = bouncer.pool(2, "prepareThreshold=0");
             PrivatePgBouncer sessionMode = PrivatePgBouncer.start(4, "session");
             HikariDataSource session = sessionMode.pool(2, "")) {
            assertEquals(PoolerProbe.Verdict.DIRECT, PoolerProbe.check(fixture.jdbi, "test"));
            Logged<PoolerProbe.Verdict> checked = logged(PoolerProbe.class, Level.INFO,
                    () -> PoolerProbe.check(Jdbi.create(unnamed), "test"));
            assertEquals(PoolerProbe.Verdict.UNNAMED, checked.result());
            // Accepted, with a line saying what unnamed statements cost and when a plain URL is safe.
            List<String> info = checked.messages();
            assertEquals(1, info.size(), info.toString());
            assertTrue(info.get(0).contains("parses and plans each statement every time")
                    && info.get(0).contains("max_prepared_statements"), info.get(0));
            assertEquals(PoolerProbe.Verdict.POOLER_NOT_MULTIPLEXING, PoolerProbe.check(Jdbi.create(session), "test"));
        }
    }

    /**
     * Session pooling looks to the check like a pooler it cannot clear, so the COMMIT is not sent with
     * the completion (where pgjdbc would name it after 5 uses) but as a separate unnamed statement.
     */
    @Test
    void behindAPoolerTheCheckCannotClearTheCommitIsASeparateRoundTrip() {
        try (PrivatePgBouncer sessionMode = PrivatePgBouncer.start(4, "session");
             HikariDataSource session = sessionMode.pool(2, "")) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(session).config(config()).build();
            executor.run("session-warm", "t", tx -> 1L);
            // The claim (with the savepoint), the completion, the COMMIT.
            assertEquals(3, roundTripsOfACompletedFirstCall(executor, "session-first"));
        }
    }

    @Test
    void theProbeClearsAPoolerThatTracksNamedStatements() {
        try (PrivatePgBouncer tracking = PrivatePgBouncer.startTrackingStatements(3, 100);
             HikariDataSource plain = tracking.pool(2, "")) {
            assertEquals(PoolerProbe.Verdict.TRACKED, PoolerProbe.check(Jdbi.create(plain), "test"));
        }
    }

    /**
     * PgBouncer 1.21+ with max_prepared_statements: a plain URL (pgjdbc names statements after 5 uses)
     * is accepted, every call commits exactly once, and a call takes the same two round trips as on a
     * direct connection. With room for 2 statements per server connection, fewer than a call sends,
     * PgBouncer closes the least recently used and prepares them again mid-call: the same holds.
     */
    @ParameterizedTest(name = "max_prepared_statements = {0}")
    @ValueSource(ints = {100, 2})
    void behindAPoolerThatTracksNamedStatementsAPlainUrlCommitsEveryCallOnceInTwoRoundTrips(int maxPreparedStatements)
            throws Exception {
        try (PrivatePgBouncer tracking = PrivatePgBouncer.startTrackingStatements(3, maxPreparedStatements);
             HikariDataSource plain = tracking.pool(THREADS, "")) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(plain).config(config()).build();
            String prefix = "tracked-" + maxPreparedStatements;
            runLoad(executor, prefix).assertEveryCallCommittedOnce(tracking);
            // The claim (with its BEGIN and the savepoint), the completion with the COMMIT.
            assertEquals(2, roundTripsOfACompletedFirstCall(executor, prefix + "-first"));
        }
    }

    /** What some work returned, and the messages a logger wrote at one level while it ran. */
    private record Logged<T>(T result, List<String> messages) {
    }

    /** Runs {@code work}, capturing what {@code source} logs at {@code level} meanwhile. */
    private static <T> Logged<T> logged(Class<?> source, Level level, Callable<T> work) throws Exception {
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        Logger logger = (Logger) LoggerFactory.getLogger(source);
        appender.start();
        logger.addAppender(appender);
        T result;
        try {
            result = work.call();
        } finally {
            logger.detachAppender(appender);
        }
        return new Logged<>(result, appender.list.stream().filter(event -> event.getLevel() == level)
                .map(ILoggingEvent::getFormattedMessage).toList());
    }

    /** Round trips of one first call for {@code key}, which returns its result and leaves the key completed. */
    private static int roundTripsOfACompletedFirstCall(PostgresIdempotentExecutor executor, String key) {
        AtomicInteger roundTrips = new AtomicInteger();
        Outcome<Long> outcome = RoundTrips.count(roundTrips, () -> executor.run(key, "t", tx -> 2L));
        assertEquals(2L, outcome.result());
        assertEquals("completed", fixture.keyRow(key, "t").get("status"));
        return roundTrips.get();
    }

    private static IdempotencyConfig config() {
        return IdempotencyConfig.builder().schema(fixture.schema.name()).build();
    }

    /** What a load returned: per key, whether the call returned an outcome, and the errors it met. */
    private static final class Load {
        final Set<String> returned = ConcurrentHashMap.newKeySet();
        final Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
        final List<String> uncommittedOutcomes = new ArrayList<>();

        String summary() {
            return returned.size() + " of " + THREADS * KEYS_PER_THREAD + " calls returned an outcome, "
                    + uncommittedOutcomes.size() + " of them not committed; errors " + new TreeMap<>(errors);
        }

        /** No call failed, and each returned an outcome that committed its payment and event once. */
        void assertEveryCallCommittedOnce(PrivatePgBouncer pooler) {
            assertEquals(Map.of(), errors, summary() + "\n" + pooler.log());
            assertEquals(THREADS * KEYS_PER_THREAD, returned.size(), summary());
            assertEquals(List.of(), uncommittedOutcomes, summary());
        }
    }

    private static Load runLoad(PostgresIdempotentExecutor executor, String prefix) throws Exception {
        String schema = fixture.schema.name();
        Load load = new Load();
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                running.add(threads.submit(() -> {
                    for (int i = 0; i < KEYS_PER_THREAD; i++) {
                        String key = prefix + "-" + thread + "-" + i;
                        try {
                            Outcome<Long> outcome = executor.run(key, "t", Long.class, tx -> {
                                tx.handle().createUpdate("INSERT INTO " + schema + ".payments (tenant_id, request_key, amount) "
                                        + "VALUES (:t, :k, 1)").bind("t", tx.tenant()).bind("k", tx.key()).execute();
                                tx.outbox().publish("payments", tx.key(), Map.of("key", tx.key()));
                                return 1L;
                            });
                            if (outcome.result() == 1L) {
                                load.returned.add(key);
                            }
                        } catch (RuntimeException e) {
                            load.errors.computeIfAbsent(e.getClass().getSimpleName() + "/" + DatabaseErrors.sqlState(e),
                                    k -> new AtomicInteger()).incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> future : running) {
                future.get(120, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        for (String key : load.returned) {
            boolean completed = fixture.keyRows(key, "t") == 1
                    && "completed".equals(fixture.keyRow(key, "t").get("status"));
            if (!completed || fixture.payments(key, "t") != 1 || fixture.outboxEvents("t", key) != 1) {
                load.uncommittedOutcomes.add(key + " (key " + (fixture.keyRows(key, "t") == 1
                        ? fixture.keyRow(key, "t").get("status") : "absent") + ", payments " + fixture.payments(key, "t")
                        + ", events " + fixture.outboxEvents("t", key) + ")");
            }
        }
        assertTrue(load.returned.size() + load.errors.values().stream().mapToInt(AtomicInteger::get).sum()
                == THREADS * KEYS_PER_THREAD);
        return load;
    }
}

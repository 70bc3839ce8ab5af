package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.PrivatePgBouncer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Relays behind a real PgBouncer in transaction pooling mode, next to executors writing events through it. */
@Timeout(120)
class OutboxRelayPgBouncerTest {
    private static final int THREADS = 8;
    private static final int CALLS_PER_THREAD = 100;
    private static final int ORDERING_KEYS = 40;

    /** A schema per test: the tests place the same payments. */
    @RegisterExtension
    final OutboxFixture fixture = OutboxFixture.migrated();
    private static PrivatePgBouncer bouncer;

    @BeforeAll
    static void start() {
        bouncer = PrivatePgBouncer.start(3);
    }

    @BeforeEach
    void createPayments() {
        fixture.execute("CREATE TABLE " + fixture.schema() + ".payments (request_key text PRIMARY KEY)");
    }

    @AfterAll
    static void stop() {
        if (bouncer != null) {
            bouncer.close();
        }
    }

    @Test
    void aRelayBehindPgBouncerWithAPlainUrlRefusesToStartAndNamesTheFix() {
        try (HikariDataSource pool = bouncer.pool(3, "")) {
            OutboxRelay relay = OutboxRelay.builder(pool, new RecordingPublisher("refused", new PublicationLog()))
                    .config(fixture.config("refused").build()).build();
            PoolerBreaksPreparedStatementsException e = assertThrows(PoolerBreaksPreparedStatementsException.class,
                    relay::start);
            assertTrue(e.getMessage().contains("prepareThreshold=0"), e.getMessage());
            assertTrue(e.getMessage().contains("PgBouncer >= 1.21 with max_prepared_statements"), e.getMessage());
            assertEquals(Map.of(), fixture.owners(), "a refused relay holds no partition");
            relay.stop();
        }
    }

    @Test
    void withPrepareThresholdZeroTwoRelaysPublishEveryCommittedEventInKeyOrder() throws Exception {
        twoRelaysPublishEveryCommittedEventInKeyOrder(bouncer, "prepareThreshold=0");
    }

    /** PgBouncer 1.21+ with max_prepared_statements: plain URLs, on which pgjdbc names statements after 5 uses. */
    @Test
    void behindAPoolerThatTracksNamedStatementsTwoRelaysOnPlainUrlsPublishEveryCommittedEventInKeyOrder() throws Exception {
        try (PrivatePgBouncer tracking = PrivatePgBouncer.startTrackingStatements(3, 100)) {
            twoRelaysPublishEveryCommittedEventInKeyOrder(tracking, "");
        }
    }

    private void twoRelaysPublishEveryCommittedEventInKeyOrder(PrivatePgBouncer pooler, String urlParameters)
            throws Exception {
        PublicationLog log = new PublicationLog();
        try (HikariDataSource executorPool = pooler.pool(THREADS, urlParameters);
             HikariDataSource poolA = pooler.pool(3, urlParameters);
             HikariDataSource poolB = pooler.pool(3, urlParameters)) {
            OutboxRelay relayA = OutboxRelay.builder(poolA, new RecordingPublisher("a", log))
                    .config(fixture.config("a").build()).build();
            OutboxRelay relayB = OutboxRelay.builder(poolB, new RecordingPublisher("b", log))
                    .config(fixture.config("b").build()).build();
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(executorPool)
                    .config(IdempotencyConfig.builder().schema(fixture.schema()).build()).build();
            relayA.start();
            relayB.start();
            try {
                int committed = placePayments(executor);
                assertEquals(THREADS * CALLS_PER_THREAD, committed, "every call returned an outcome");
                List<Long> ids = fixture.longs("SELECT id FROM " + fixture.schema() + ".outbox_events ORDER BY id");
                assertEquals(committed, ids.size(), "one event per call");
                assertEquals(committed, fixture.number("SELECT count(*) FROM " + fixture.schema() + ".payments"));
                Await.until("every event published", Duration.ofSeconds(60),
                        () -> ids.stream().allMatch(log::published));
                assertEquals(List.of(), log.keysOutOfOrder(), "first publications per key in outbox order");
                Await.until("every event marked published", Duration.ofSeconds(30),
                        () -> fixture.count("status <> 'published'") == 0);
            } finally {
                relayA.stop();
                relayB.stop();
            }
        }
    }

    private int placePayments(PostgresIdempotentExecutor executor) throws Exception {
        String schema = fixture.schema();
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<Integer>> running = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                running.add(threads.submit(() -> {
                    int returned = 0;
                    for (int i = 0; i < CALLS_PER_THREAD; i++) {
                        String key = "pay-" + thread + "-" + i;
                        String orderingKey = "account-" + (thread * CALLS_PER_THREAD + i) % ORDERING_KEYS;
                        executor.run(key, "t", String.class, tx -> {
                            tx.handle().createUpdate("INSERT INTO " + schema + ".payments (request_key) VALUES (:k)")
                                    .bind("k", tx.key()).execute();
                            tx.outbox().publish("payments", orderingKey, Map.of("key", tx.key()));
                            return "ok";
                        });
                        returned++;
                    }
                    return returned;
                }));
            }
            int total = 0;
            for (Future<Integer> future : running) {
                total += future.get(90, TimeUnit.SECONDS);
            }
            return total;
        } finally {
            threads.shutdownNow();
        }
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.SerializableTransactionRunner;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** How many times a call in a transaction of the executor's own waits for PostgreSQL ({@link RoundTrips}). */
@Timeout(60)
class ExecutorRoundTripsTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(2);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor(c -> { });
    }

    @Test
    void aFirstCallWithOneInsertAndOneEventWaitsForPostgresThreeTimes() {
        // Warm: the pooler probe has run and the pool has just validated its connection.
        executor.run(newKey(), "t1", tx -> insertPayment(tx, 1));

        String key = newKey();
        AtomicInteger roundTrips = new AtomicInteger();
        AtomicInteger simpleQueries = new AtomicInteger();
        Outcome<Long> outcome = paymentWithEvent(executor, key, roundTrips, simpleQueries);

        assertFalse(outcome.replayed());
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(1, db.outboxEvents("t1", key));
        // The claim (with the BEGIN and the savepoint), the callback's insert, the completion with the event and the commit.
        assertEquals(3, roundTrips.get());
        assertEquals(0, simpleQueries.get(), "pgjdbc's BEGIN, a simple query PostgreSQL answers on its own, was sent");
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
    }

    /** A handler other than Jdbi's local one may act at begin (set an isolation level): it begins first, as before. */
    @Test
    void underAnotherTransactionHandlerTheCallLetsItBeginAndStillWaitsThreeTimes() {
        Jdbi jdbi = Jdbi.create(db.schema.dataSource()).setTransactionHandler(new SerializableTransactionRunner());
        PostgresIdempotentExecutor handled = PostgresIdempotentExecutor.builder(jdbi)
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();
        handled.run(newKey(), "t1", tx -> insertPayment(tx, 1));

        String key = newKey();
        AtomicInteger roundTrips = new AtomicInteger();
        AtomicInteger simpleQueries = new AtomicInteger();
        Outcome<Long> outcome = paymentWithEvent(handled, key, roundTrips, simpleQueries);

        assertFalse(outcome.replayed());
        assertEquals(1, db.outboxEvents("t1", key));
        assertEquals(3, roundTrips.get());
        assertEquals(1, simpleQueries.get(), "pgjdbc's own BEGIN");
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void aStoredBusinessFailureWaitsForPostgresThreeTimes() {
        String key = newKey();
        AtomicInteger roundTrips = new AtomicInteger();
        BusinessFailure failure = assertThrows(BusinessFailure.class, () -> RoundTrips.count(roundTrips, () ->
                executor.run(key, "t1", tx -> {
                    insertPayment(tx, 5);
                    throw new BusinessFailure("declined", "card declined");
                })));

        assertEquals("declined", failure.code());
        assertEquals(0, db.payments(key, "t1"));
        assertEquals("failed", db.keyRow(key, "t1").get("status"));
        // The claim, the callback's insert, and the rollback to the savepoint with the stored failure and the commit.
        assertEquals(3, roundTrips.get());
    }

    /** What each of a duplicate storm's waiters does once the winner commits, and any later replay. */
    @Test
    void aReplayWaitsForPostgresThreeTimes() {
        String key = newKey();
        executor.run(key, "t1", tx -> insertPayment(tx, 3));

        AtomicInteger roundTrips = new AtomicInteger();
        Outcome<Long> replay = RoundTrips.count(roundTrips, () -> executor.run(key, "t1", tx -> insertPayment(tx, 4)));

        assertTrue(replay.replayed());
        assertEquals(1, db.payments(key, "t1"));
        // The claim, which also begins; the read of the row it found; the commit.
        assertEquals(3, roundTrips.get());
    }

    /** A first call with one payment and one outbox event, counting its round trips and simple queries. */
    private static Outcome<Long> paymentWithEvent(PostgresIdempotentExecutor executor, String key,
                                                  AtomicInteger roundTrips, AtomicInteger simpleQueries) {
        return RoundTrips.count(roundTrips, simpleQueries, () -> executor.run(key, "t1", tx -> {
            long id = insertPayment(tx, 2);
            tx.outbox().publish("payments", key, Map.of("amount", 2));
            return id;
        }));
    }
}

package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.Outcome;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How many times a call waits for PostgreSQL: pgjdbc flushes what it queued and waits for the answer
 * at each Sync it sends (a BEGIN rides along with the next one), and logs each Sync at FINEST, so
 * counting them on the caller's thread counts round trips.
 */
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
        Outcome<Long> outcome = countingRoundTrips(roundTrips, () -> executor.run(key, "t1", tx -> {
            long id = insertPayment(tx, 2);
            tx.outbox().publish("payments", key, Map.of("amount", 2));
            return id;
        }));

        assertFalse(outcome.replayed());
        assertEquals(1, db.payments(key, "t1"));
        assertEquals(1, db.outboxEvents("t1", key));
        // The claim (with the savepoint and the key read), the callback's insert, the completion with the event and the commit.
        assertEquals(3, roundTrips.get());
        assertEquals("completed", db.keyRow(key, "t1").get("status"));
    }

    @Test
    void aStoredBusinessFailureWaitsForPostgresThreeTimes() {
        String key = newKey();
        AtomicInteger roundTrips = new AtomicInteger();
        BusinessFailure failure = assertThrows(BusinessFailure.class, () -> countingRoundTrips(roundTrips, () ->
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
    void aReplayWaitsForPostgresTwice() {
        String key = newKey();
        executor.run(key, "t1", tx -> insertPayment(tx, 3));

        AtomicInteger roundTrips = new AtomicInteger();
        Outcome<Long> replay = countingRoundTrips(roundTrips, () -> executor.run(key, "t1", tx -> insertPayment(tx, 4)));

        assertTrue(replay.replayed());
        assertEquals(1, db.payments(key, "t1"));
        // The claim, which also reads the row it found, and the commit.
        assertEquals(2, roundTrips.get());
    }

    private static <R> R countingRoundTrips(AtomicInteger count, Supplier<R> work) {
        Logger pgjdbc = Logger.getLogger("org.postgresql.core.v3.QueryExecutorImpl");
        Thread caller = Thread.currentThread();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (Thread.currentThread() == caller && record.getMessage() != null
                        && record.getMessage().contains("FE=> Sync")) {
                    count.incrementAndGet();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        handler.setLevel(Level.ALL);
        Level before = pgjdbc.getLevel();
        pgjdbc.addHandler(handler);
        pgjdbc.setLevel(Level.FINEST);
        try {
            return work.get();
        } finally {
            pgjdbc.setLevel(before);
            pgjdbc.removeHandler(handler);
        }
    }
}

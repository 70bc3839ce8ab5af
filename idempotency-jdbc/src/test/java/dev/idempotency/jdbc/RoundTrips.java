package dev.idempotency.jdbc;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Counts how many times work waits for PostgreSQL: pgjdbc flushes what it queued and waits for the
 * answer at each Sync it sends (its own BEGIN rides along with the next one), and logs each Sync at
 * FINEST, so counting them on the caller's thread counts round trips. It logs the simple queries it
 * sends too (its BEGIN is one), each of which PostgreSQL answers with a send of its own.
 */
final class RoundTrips {
    private RoundTrips() {
    }

    /** Runs {@code work}, adding to {@code count} each round trip it makes on this thread. */
    static <R> R count(AtomicInteger count, Supplier<R> work) {
        return count(count, new AtomicInteger(), work);
    }

    /** {@link #count(AtomicInteger, Supplier)}, adding to {@code simpleQueries} each simple query it sends. */
    static <R> R count(AtomicInteger count, AtomicInteger simpleQueries, Supplier<R> work) {
        Logger pgjdbc = Logger.getLogger("org.postgresql.core.v3.QueryExecutorImpl");
        Thread caller = Thread.currentThread();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (Thread.currentThread() != caller || record.getMessage() == null) {
                    return;
                }
                if (record.getMessage().contains("FE=> Sync")) {
                    count.incrementAndGet();
                } else if (record.getMessage().contains("FE=> SimpleQuery")) {
                    simpleQueries.incrementAndGet();
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

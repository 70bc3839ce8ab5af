package dev.idempotency.faults;

import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Concurrent {@code executor.run} calls, {@code duplicates} callers per key, as retried requests
 * arrive in production: each callback inserts one business row into {@code effects} and writes one
 * outbox event whose partition key is one of {@code partitionKeys} (so each partition key gets many
 * events over time). A share of callbacks also update the two {@code hot_rows} in random order, so
 * such callbacks deadlock each other now and then. Callers retry {@link TransientFailureException}
 * and {@link KeyInProgressException} with the same key until they get an outcome or the deadline
 * passes; every other exception is recorded in the {@link Ledger} as unclear.
 */
final class Workload {
    private final PostgresIdempotentExecutor executor;
    private final Ledger ledger;
    private final String tenant;
    private final String topic;
    private int duplicates = 3;
    private int partitionKeys = 8;
    private int threads = 8;
    private double deadlockShare;
    private Duration callerDeadline = Duration.ofSeconds(90);

    Workload(PostgresIdempotentExecutor executor, Ledger ledger, String tenant, String topic) {
        this.executor = executor;
        this.ledger = ledger;
        this.tenant = tenant;
        this.topic = topic;
    }

    Workload duplicates(int duplicates) {
        this.duplicates = duplicates;
        return this;
    }

    Workload partitionKeys(int partitionKeys) {
        this.partitionKeys = partitionKeys;
        return this;
    }

    Workload threads(int threads) {
        this.threads = threads;
        return this;
    }

    /** Share (0 to 1) of keys whose callback updates the hot rows in random order. */
    Workload deadlockShare(double deadlockShare) {
        this.deadlockShare = deadlockShare;
        return this;
    }

    Workload callerDeadline(Duration callerDeadline) {
        this.callerDeadline = callerDeadline;
        return this;
    }

    String tenant() {
        return tenant;
    }

    String topic() {
        return topic;
    }

    /** Runs keys {@code prefix-0 .. prefix-(keys-1)}, all their duplicate callers shuffled; returns when all callers are done. */
    void run(String prefix, int keys) throws InterruptedException {
        List<Runnable> callers = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
            String key = prefix + "-" + i;
            String partitionKey = "pk-" + (i % partitionKeys);
            boolean deadlocks = ThreadLocalRandom.current().nextDouble() < deadlockShare;
            for (int d = 0; d < duplicates; d++) {
                callers.add(() -> call(key, partitionKey, deadlocks));
            }
        }
        // Duplicates of one key arrive close together but not in lockstep.
        Collections.shuffle(callers.subList(0, callers.size()), ThreadLocalRandom.current());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            callers.forEach(pool::execute);
            pool.shutdown();
            if (!pool.awaitTermination(callerDeadline.toSeconds() + 60, TimeUnit.SECONDS)) {
                throw new AssertionError("callers still running after their deadline");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private void call(String key, String partitionKey, boolean deadlocks) {
        Ledger.KeyRecord record = ledger.key(key);
        record.callers.incrementAndGet();
        long deadline = System.nanoTime() + callerDeadline.toNanos();
        while (true) {
            ledger.attempt();
            try {
                Outcome<String> outcome = executor.run(key, tenant, String.class, tx -> work(tx, partitionKey, deadlocks));
                record.outcomes.incrementAndGet();
                if (!outcome.replayed()) {
                    record.firstRuns.incrementAndGet();
                }
                if (!expectedResult(key).equals(outcome.result())) {
                    record.wrongResults.incrementAndGet();
                }
                return;
            } catch (TransientFailureException e) {
                ledger.retried("TransientFailure " + (e.sqlState() != null ? e.sqlState() : rootCause(e)));
            } catch (KeyInProgressException e) {
                ledger.retried("KeyInProgress");
            } catch (RuntimeException | Error e) {
                ledger.unclear(key, e);
                return;
            }
            if (System.nanoTime() > deadline) {
                record.gaveUp.incrementAndGet();
                return;
            }
            sleep(10 + ThreadLocalRandom.current().nextInt(40));
        }
    }

    private static String rootCause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName();
    }

    static String expectedResult(String key) {
        return "done-" + key;
    }

    private String work(PostgresTransaction tx, String partitionKey, boolean deadlocks) {
        tx.handle().createUpdate("INSERT INTO effects (tenant_id, request_key) VALUES (:t, :k)")
                .bind("t", tx.tenant()).bind("k", tx.key()).execute();
        if (deadlocks) {
            boolean forward = ThreadLocalRandom.current().nextBoolean();
            touchHotRow(tx, forward ? 1 : 2);
            tx.handle().createQuery("SELECT pg_sleep(0.02)").mapTo(String.class).one();
            touchHotRow(tx, forward ? 2 : 1);
        } else {
            // A little time inside the transaction, so that injected faults land mid-callback.
            tx.handle().createQuery("SELECT pg_sleep(0.002)").mapTo(String.class).one();
        }
        tx.outbox().publish(topic, partitionKey, Map.of("key", tx.key()));
        return expectedResult(tx.key());
    }

    private static void touchHotRow(PostgresTransaction tx, int id) {
        tx.handle().createUpdate("UPDATE hot_rows SET n = n + 1 WHERE id = :id").bind("id", id).execute();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

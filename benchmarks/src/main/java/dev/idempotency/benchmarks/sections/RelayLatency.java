package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSettings;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.ClosedLoopLoad;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.benchmarks.harness.Warmup;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayListener;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Section 6: relay latency. Producers commit one outbox event per {@code executor.run} at a steady
 * rate (2,000 events/s by default, paced open-loop: each call is due at a fixed time, whatever the
 * previous one did), and a relay in the same JVM, woken by the executor's after-commit signal,
 * publishes to a no-op publisher. Per event: from {@code executor.run} returning (the commit) to the
 * publisher seeing it. Targets: p50 under 10 ms, p99 under 50 ms.
 */
final class RelayLatency implements Section {
    static final double P50_CEILING_MILLIS = 10;
    static final double P99_CEILING_MILLIS = 50;
    /** Producer threads and their pool's connections: enough for 2,000 commits/s at a few ms each. */
    private static final int PRODUCERS = 8;
    private static final int PARTITION_KEYS = 1_000;
    /** Longest wait, after the last call, for the relay to publish the measured events. */
    private static final long DRAIN_TIMEOUT_SECONDS = 60;

    @Override
    public String name() {
        return "latency";
    }

    @Override
    public String title() {
        return "6 relay latency";
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        int rate = run.settings().relay().latencyRate();
        Histogram[] relayOwn = new Histogram[1];
        long[] committed = new long[1];
        Measurement m = run.cell("relay commit-to-publish", 1, () -> {
            Result result = measure(run, rate);
            relayOwn[0] = result.sinceCreated;
            committed[0] = result.achievedCalls;
            return result.measurement;
        });
        double achieved = committed[0] / (double) run.settings().window().toSeconds();
        ResultRow row = new ResultRow(title(), String.format(Locale.ROOT, "commit to publish at %d events/s", rate), 1,
                m.opsPerSecond(), m.p50Millis(), m.p99Millis(), ClientCost.NONE,
                String.format(Locale.ROOT, "%d events measured, %.0f commits/s achieved%s", m.operations(), achieved,
                        m.errors() > 0 ? ", ERRORS: " + m.errors() + " (" + m.firstError() + ")" : ""),
                Targets.verdict(m.p50Millis() < P50_CEILING_MILLIS && m.p99Millis() < P99_CEILING_MILLIS && m.errors() == 0,
                        "p50 < " + (long) P50_CEILING_MILLIS + " ms, p99 < " + (long) P99_CEILING_MILLIS + " ms"));
        List<ResultRow> rows = new java.util.ArrayList<>(List.of(row));
        if (relayOwn[0] != null && relayOwn[0].getTotalCount() > 0) {
            rows.add(new ResultRow(title(), "relay listener: created_at to ack (database clock)", 1, null,
                    relayOwn[0].getValueAtPercentile(50) / 1e6, relayOwn[0].getValueAtPercentile(99) / 1e6, ClientCost.NONE,
                    "includes the writing transaction", ""));
        }
        run.note("Section 6: " + PRODUCERS + " producer threads (pool of " + PRODUCERS + ") each call executor.run writing one "
                + "outbox event over " + PARTITION_KEYS + " keys, due at fixed intervals; the relay (pool of "
                + RelayBenchSettings.RELAY_POOL_SIZE + ", " + RelayDrain.config(run, "bench-latency") + ") is woken by "
                + "afterOutboxCommit(relay::wakeUp). Latency runs from executor.run returning to the no-op publisher "
                + "seeing the event; one the publisher saw before the producer thread recorded its return counts as 0.");
        return rows;
    }

    private record Result(Measurement measurement, Histogram sinceCreated, long achievedCalls) {
    }

    private static Result measure(BenchmarkRun run, int rate) throws Exception {
        Duration warmup = run.warmup("relay-latency").least();
        long intervalNanos = TimeUnit.SECONDS.toNanos(1) / rate;
        int warmupCalls = (int) (warmup.toNanos() / intervalNanos);
        int measuredCalls = (int) (run.settings().window().toNanos() / intervalNanos);
        int total = warmupCalls + measuredCalls;
        AtomicLongArray committedAt = new AtomicLongArray(total);
        AtomicLongArray seenAt = new AtomicLongArray(total);
        Histogram sinceCreated = new Histogram(1_000L, 60_000_000_000L, 3);
        AtomicLong errors = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        String schema = run.database().schema();

        NoOpPublisher publisher = new NoOpPublisher(event -> {
            int seq = sequence(event);
            if (seq >= 0 && seq < total) {
                seenAt.compareAndSet(seq, 0, System.nanoTime());
            }
        });
        OutboxRelayListener listener = new OutboxRelayListener() {
            @Override
            public void published(OutboxEvent event, Duration since) {
                if (sequence(event) >= warmupCalls) {
                    synchronized (sinceCreated) {
                        sinceCreated.recordValue(Math.max(1_000L, Math.min(since.toNanos(), sinceCreated.getHighestTrackableValue())));
                    }
                }
            }
        };
        ExecutorService producers = Executors.newFixedThreadPool(PRODUCERS);
        try (HikariDataSource relayPool = run.database().pool("latency-relay", RelayBenchSettings.RELAY_POOL_SIZE);
             HikariDataSource producerPool = run.database().pool("latency-producers", PRODUCERS)) {
            OutboxRelay relay = OutboxRelay.builder(relayPool, publisher)
                    .config(RelayDrain.config(run, "bench-latency")).listener(listener).build();
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(producerPool)
                    .config(run.executorConfig()).afterOutboxCommit(relay::wakeUp).build();
            relay.start();
            try {
                warmUntilTheJitIsQuiet(run, executor, schema);
                long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
                for (int i = 0; i < total; i++) {
                    long due = start + i * intervalNanos;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    int seq = i;
                    producers.execute(() -> {
                        try {
                            executor.run("latency-" + schema + "-" + seq, PaymentCalls.TENANT, Integer.class, tx -> {
                                tx.outbox().publish(PaymentCalls.TOPIC, Integer.toString(seq % PARTITION_KEYS), Map.of("seq", seq));
                                return seq;
                            });
                            committedAt.set(seq, System.nanoTime());
                        } catch (RuntimeException e) {
                            errors.incrementAndGet();
                            firstError.compareAndSet(null, e.toString());
                        }
                    });
                }
                producers.shutdown();
                if (!producers.awaitTermination(DRAIN_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("latency: producers did not finish their calls within "
                            + DRAIN_TIMEOUT_SECONDS + " s of the last one being due");
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DRAIN_TIMEOUT_SECONDS);
                while (!allSeen(committedAt, seenAt, total) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
            } finally {
                producers.shutdownNow();
                relay.stop();
            }
        }
        Histogram latency = Measurement.newLatencyHistogram();
        long unseen = 0;
        long achieved = 0;
        for (int seq = warmupCalls; seq < total; seq++) {
            long commit = committedAt.get(seq);
            if (commit == 0) {
                continue;
            }
            achieved++;
            long seen = seenAt.get(seq);
            if (seen == 0) {
                unseen++;
                continue;
            }
            latency.recordValue(Math.max(1_000L, Math.min(seen - commit, latency.getHighestTrackableValue())));
        }
        if (unseen > 0) {
            errors.addAndGet(unseen);
            firstError.compareAndSet(null, unseen + " committed events not published within " + DRAIN_TIMEOUT_SECONDS + " s");
        }
        Measurement m = Measurement.of(latency, run.settings().window().toNanos() / 1e9, errors.get(), firstError.get());
        return new Result(m, sinceCreated, achieved);
    }

    /**
     * Runs the producers' call in a closed loop, the relay publishing beside it, until the JIT compiler
     * is quiet (within {@link BenchmarkSettings#jitQuietWithin()}), so that the paced calls measure the
     * relay rather than the compiler. A paced warm-up cannot wait for that: at the section's rate the
     * producers fall behind while the compiler takes its share, and their queue outgrows the drain.
     * The events carry no {@code seq}, so neither the publisher nor the listener counts them.
     */
    private static void warmUntilTheJitIsQuiet(BenchmarkRun run, PostgresIdempotentExecutor executor, String schema)
            throws InterruptedException {
        if (run.settings().jitQuietWithin().isZero()) {
            return;
        }
        AtomicLong calls = new AtomicLong();
        ClosedLoopLoad.run("relay-latency-jit", PRODUCERS, run.settings().callerThreads(),
                new Warmup(Duration.ZERO, run.settings().jitQuietWithin()),
                Duration.ofSeconds(1), () -> executor.run("latency-jit-" + schema + "-" + calls.incrementAndGet(),
                        PaymentCalls.TENANT, Integer.class, tx -> {
                            tx.outbox().publish(PaymentCalls.TOPIC, "warm-up", Map.of("warmup", "yes"));
                            return 0;
                        }));
    }

    private static boolean allSeen(AtomicLongArray committedAt, AtomicLongArray seenAt, int total) {
        for (int seq = 0; seq < total; seq++) {
            if (committedAt.get(seq) != 0 && seenAt.get(seq) == 0) {
                return false;
            }
        }
        return true;
    }

    /** The payload's {@code seq}, from the JSON {@code {"seq": n}} the producers wrote; -1 when absent. */
    static int sequence(OutboxEvent event) {
        String json = event.payloadJson();
        int colon = json.indexOf(':');
        if (colon < 0) {
            return -1;
        }
        int value = 0;
        boolean digits = false;
        for (int i = colon + 1; i < json.length(); i++) {
            char c = json.charAt(i);
            if (c >= '0' && c <= '9') {
                value = value * 10 + (c - '0');
                digits = true;
            } else if (digits || c != ' ') {
                break;
            }
        }
        return digits ? value : -1;
    }
}

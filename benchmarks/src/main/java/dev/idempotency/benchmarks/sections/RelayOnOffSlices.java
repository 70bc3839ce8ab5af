package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.SlicedLoad;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxRelay;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Section 9's writers beside a relay measured within one load (issue 38, item 4): the executor at {@link
 * RelayCost#WRITERS} callers writes without a pause while one relay is started and stopped between slices
 * as long as the window, in the order off, on, then on, off, and so on ({@code --repeat} pairs), and the
 * writers' rate in the slices with the relay is compared with their rate in the slices without it. In the
 * row above, each cell opens its own pools and warms up, and one round's ratio moved between 0.66 and 1.68;
 * here both sides share one load (the machine's own slow stretches still show in the pairs). A slice with
 * the relay that follows one without begins with the relay starting and draining what the writers
 * committed while it was stopped, on top of what they commit meanwhile: more work than a relay that never
 * stopped does, so the ratio leans against the relay, not for it.
 */
final class RelayOnOffSlices {
    static final String CELL = "executor.run: payment + outbox event, 1 relay started and stopped between slices";
    private static final String INSTANCE = "bench-slices";
    private static final String RELAY_POOL = "slices-relay";
    /** How long the last relay may take to publish what the writers left once they stop. */
    private static final long FINAL_DRAIN_MILLIS = 60_000;
    private static final Logger log = LoggerFactory.getLogger(RelayOnOffSlices.class);

    private RelayOnOffSlices() {
    }

    /** Whether slice {@code index} (from 0) has the relay: off, on in even pairs, on, off in odd ones. */
    static boolean withRelay(int index) {
        boolean secondOfPair = index % 2 == 1;
        return (index / 2) % 2 == 0 ? secondOfPair : !secondOfPair;
    }

    /** Measures {@code --repeat} pairs of slices from emptied tables, and returns the section's row. */
    static ResultRow measure(BenchmarkRun run) throws Exception {
        run.database().reset();
        int slices = 2 * run.settings().repeat();
        AtomicLong published = new AtomicLong();
        AtomicReference<OutboxRelay> relay = new AtomicReference<>();
        AtomicReference<RelayCpu> cpu = new AtomicReference<>();
        List<RelayCpu.Share> shares = new ArrayList<>();
        try (HikariDataSource relayPool = run.database().pool(RELAY_POOL, RelayBenchSettings.RELAY_POOL_SIZE);
             HikariDataSource executorPool = run.database().pool("slices-executor", RelayCost.WRITERS);
             HikariDataSource monitorPool = run.database().pool("slices-monitor", 1)) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(executorPool).config(run.executorConfig())
                    .afterOutboxCommit(() -> {
                        OutboxRelay current = relay.get();
                        if (current != null) {
                            current.wakeUp();
                        }
                    }).build();
            String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
            Runnable startRelay = () -> {
                OutboxRelay started = OutboxRelay.builder(relayPool, new CountingPublisher(new NoOpPublisher(), published))
                        .config(RelayDrain.config(run, INSTANCE)).build();
                started.start();
                relay.set(started);
            };
            // The warm-up runs with the relay, so the JIT has compiled the writers' code and the relay's together.
            startRelay.run();
            SlicedLoad.Result load = SlicedLoad.run("executor-relay-slices", RelayCost.WRITERS, run.settings().callerThreads(),
                    run.warmup(CELL), run.settings().window(), slices,
                    () -> PaymentCalls.executorCall(executor, insertPayment, PaymentCalls.freshKey()),
                    next -> {
                        RelayCpu ended = cpu.getAndSet(null);
                        if (ended != null) {
                            shares.add(ended.read());
                        }
                        if (next == slices) {
                            return;
                        }
                        boolean on = withRelay(next);
                        log.info("slice {} of {}: {}", next + 1, slices, on ? "with the relay" : "without the relay");
                        if (!on && relay.get() != null) {
                            relay.getAndSet(null).stop();
                        }
                        if (on) {
                            cpu.set(RelayCpu.ofRelay(INSTANCE, RELAY_POOL, monitorPool));
                            if (relay.get() == null) {
                                startRelay.run();
                            }
                        }
                    });
            // The last relay publishes what the writers left before the row counts what is pending.
            if (relay.get() == null) {
                startRelay.run();
            }
            OutboxBacklog backlog = OutboxBacklog.builder(monitorPool).schema(run.database().schema()).build();
            long pending = backlog.pendingCount();
            long until = System.currentTimeMillis() + FINAL_DRAIN_MILLIS;
            while (pending > 0 && System.currentTimeMillis() < until) {
                Thread.sleep(20);
                pending = backlog.pendingCount();
            }
            relay.getAndSet(null).stop();
            return row(run, load, shares, published.get(), pending);
        } finally {
            OutboxRelay left = relay.get();
            if (left != null) {
                left.stop();
            }
        }
    }

    private static ResultRow row(BenchmarkRun run, SlicedLoad.Result load, List<RelayCpu.Share> shares, long published, long pending) {
        long onCalls = 0;
        long offCalls = 0;
        double onSeconds = 0;
        double offSeconds = 0;
        List<Double> pairRatios = new ArrayList<>();
        for (int i = 0; i < load.slices().size(); i++) {
            SlicedLoad.Slice slice = load.slices().get(i);
            if (withRelay(i)) {
                onCalls += slice.calls();
                onSeconds += slice.seconds();
            } else {
                offCalls += slice.calls();
                offSeconds += slice.seconds();
            }
            if (i % 2 == 1) {
                SlicedLoad.Slice other = load.slices().get(i - 1);
                SlicedLoad.Slice on = withRelay(i) ? slice : other;
                SlicedLoad.Slice off = withRelay(i) ? other : slice;
                pairRatios.add(Targets.ratio(on.opsPerSecond(), off.opsPerSecond()));
            }
        }
        double onRate = onCalls / onSeconds;
        double offRate = offCalls / offSeconds;
        double ratio = Targets.ratio(onRate, offRate);
        String pairs = pairRatios.stream().map(Targets::format).collect(Collectors.joining(" "));
        RelayCpu.Share cpu = new RelayCpu.Share(shares.stream().mapToDouble(RelayCpu.Share::threads).average().orElse(Double.NaN),
                shares.stream().mapToDouble(RelayCpu.Share::backends).average().orElse(Double.NaN));
        String errors = load.errors() > 0 ? "ERRORS: " + load.errors() + " (the first: " + load.firstError() + "); " : "";
        String compared = String.format(Locale.ROOT, "%swith/without relay: ops %s over %d pairs of %d s slices "
                        + "(without the relay %.0f ops/s; the pairs' ratios %s, median %s); in the slices with it, %s; "
                        + "relay published %d, %d pending at the end", errors, Targets.format(ratio), pairRatios.size(),
                run.settings().window().toSeconds(), offRate, pairs, Targets.format(Measurement.medianOf(pairRatios)), cpu.describe(),
                published, pending);
        run.note("Section 9, '" + CELL + "': the writers run without a pause (one pool, one warm-up with a relay) while one relay "
                + "(pool of " + RelayBenchSettings.RELAY_POOL_SIZE + ", no-op publisher, woken by afterOutboxCommit) is stopped "
                + "and started between slices as long as the window, off then on, then on then off, for --repeat pairs; the "
                + "ratio is the writers' calls per second over the slices with the relay over those without. A slice with the "
                + "relay after one without begins with the relay's start and its drain of what was committed while it was "
                + "stopped, so it carries more relay work than a relay that never stops. Relay CPU: as in the row above, "
                + "averaged over the slices with the relay.");
        return new ResultRow(RelayCost.TITLE, CELL, RelayCost.WRITERS, onRate, null, null, ClientCost.NONE, compared,
                Targets.atLeast("ops ratio", ratio, RelayCost.WRITER_RATIO_FLOOR));
    }
}

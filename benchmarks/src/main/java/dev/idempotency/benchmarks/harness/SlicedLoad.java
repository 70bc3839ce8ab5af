package dev.idempotency.benchmarks.harness;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one operation from a fixed number of caller threads in a closed loop without a pause, first for a
 * warm-up ({@link Warmup}), then through consecutive slices of equal length, counting the calls that
 * return in each. At each boundary a hook changes what runs beside the callers (starts or stops a relay,
 * say) while they go on. Slices of one load share its pools, its warm-up and its JIT, which separate
 * cells, each with its own, do not.
 */
public final class SlicedLoad {
    private static final Logger log = LoggerFactory.getLogger(SlicedLoad.class);

    /** Called at each boundary, while the callers run; the next slice's clock starts when it returns. */
    @FunctionalInterface
    public interface Boundary {
        /**
         * Before slice {@code next} (from 0); {@code next} equals the slice count once, after the last slice.
         */
        void at(int next) throws Exception;
    }

    /** The calls that returned during one slice, and its length. */
    public record Slice(long calls, double seconds) {
        public double opsPerSecond() {
            return calls / seconds;
        }
    }

    /** The slices in order, and the calls that failed over the whole load (warm-up included) with the first failure. */
    public record Result(List<Slice> slices, long errors, String firstError) {
    }

    private SlicedLoad() {
    }

    public static Result run(String name, int callers, CallerThreads callerThreads, Warmup warmup, Duration slice, int slices,
                             ClosedLoopLoad.Call call, Boundary boundary) throws Exception {
        LongAdder returned = new LongAdder();
        AtomicLong errors = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < callers; i++) {
            threads.add(callerThreads.unstarted(name + "-caller-" + i, () -> {
                while (running.get()) {
                    if (ClosedLoopLoad.callOnce(call, errors, firstError)) {
                        returned.increment();
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        List<Slice> measured = new ArrayList<>();
        try {
            Thread.sleep(warmup.least().toMillis());
            JitCompiler.awaitQuiet(warmup.jitQuietWithin());
            for (int i = 0; i < slices; i++) {
                boundary.at(i);
                long from = System.nanoTime();
                long before = returned.sum();
                Thread.sleep(slice.toMillis());
                Slice done = new Slice(returned.sum() - before, (System.nanoTime() - from) / 1e9);
                measured.add(done);
                log.info("{} slice {} of {}: {} ops/s", name, i + 1, slices, String.format(Locale.ROOT, "%.0f", done.opsPerSecond()));
            }
            boundary.at(slices);
        } finally {
            running.set(false);
        }
        ClosedLoopLoad.awaitCallers(threads, System.nanoTime(), name + ": a caller was still inside a call "
                + ClosedLoopLoad.STRAGGLER_GRACE.toSeconds() + " s after the last slice ended; the database may be stuck");
        return new Result(List.copyOf(measured), errors.get(), firstError.get());
    }
}

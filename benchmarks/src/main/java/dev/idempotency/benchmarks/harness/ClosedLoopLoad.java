package dev.idempotency.benchmarks.harness;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one operation from a fixed number of caller threads ({@link CallerThreads}), each sending its
 * next call as soon as the last returns (a closed loop, as pgbench does), first for a warm-up that is
 * not recorded, then for the measured window. The warm-up lasts at least its least duration and goes
 * on until the JIT compiler is quiet, within its bound ({@link Warmup}). Only calls that start inside
 * the window are counted. The JVM's CPU time over the window (callers, GC and JIT alike) divided by
 * the calls is the client's CPU per call; its user-mode part and its threads' context switches likewise.
 */
public final class ClosedLoopLoad {
    private static final Logger log = LoggerFactory.getLogger(ClosedLoopLoad.class);
    /** Grace after the window for calls still in flight, past which the run is reported as stuck. */
    static final Duration STRAGGLER_GRACE = Duration.ofSeconds(60);

    /** One call of the measured operation; an exception counts as an error. */
    @FunctionalInterface
    public interface Call {
        void run() throws Exception;
    }

    private ClosedLoopLoad() {
    }

    public static Measurement run(String name, int callers, CallerThreads callerThreads, Warmup warmup, Duration window, Call call)
            throws InterruptedException {
        CountDownLatch start = new CountDownLatch(1);
        // Callers outlive the window's last reading: a thread that ends takes its context switches along.
        CountDownLatch windowRead = new CountDownLatch(1);
        List<Histogram> histograms = new ArrayList<>();
        long[] lastReturn = new long[callers];
        AtomicLong errors = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        // Set once the warm-up has ended; until then every caller warms up.
        AtomicLong windowStart = new AtomicLong(Long.MAX_VALUE);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < callers; i++) {
            Histogram histogram = Measurement.newLatencyHistogram();
            histograms.add(histogram);
            int index = i;
            Thread thread = callerThreads.unstarted(name + "-caller-" + i, () -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                // The warm-up runs the measured loop itself, recording too, so the JIT has compiled all of it
                // before the window; the first call that starts inside the window clears what it recorded.
                long now = System.nanoTime();
                long measureUntil = Long.MAX_VALUE;
                while (now < measureUntil && !Thread.currentThread().isInterrupted()) {
                    if (measureUntil == Long.MAX_VALUE && now >= windowStart.get()) {
                        histogram.reset();
                        measureUntil = windowStart.get() + window.toNanos();
                    }
                    long began = now;
                    if (callOnce(call, errors, firstError)) {
                        now = System.nanoTime();
                        histogram.recordValue(Math.max(1_000L, Math.min(now - began, histogram.getHighestTrackableValue())));
                    } else {
                        now = System.nanoTime();
                    }
                }
                lastReturn[index] = now;
                try {
                    windowRead.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            threads.add(thread);
            thread.start();
        }
        long warmupStart = System.nanoTime();
        start.countDown();
        sleepUntil(warmupStart + warmup.least().toNanos());
        long compiling = JitCompiler.awaitQuiet(warmup.jitQuietWithin());
        long from = System.nanoTime();
        windowStart.set(from);
        long cpuAtStart = processCpuNanos();
        Optional<ClientProcess.Reading> processAtStart = ClientProcess.ofThisProcess();
        if (compiling >= JitCompiler.QUIET_MILLIS) {
            log.warn("{} with {} caller(s): the JIT compiler was still busy when the window began ({} ms compiling in "
                    + "the last {} s of a {} s warm-up); raise --jit-quiet-within", name, callers, compiling,
                    JitCompiler.PROBE.toSeconds(), (from - warmupStart) / 1_000_000_000);
        } else {
            log.info("{} with {} caller(s): window after {} s of warm-up, the JIT quiet", name, callers,
                    (from - warmupStart) / 1_000_000_000);
        }
        long compiledBefore = JitCompiler.compilationMillis();
        long cpuAtEnd;
        Optional<ClientProcess.Reading> processAtEnd;
        try {
            sleepUntil(from + window.toNanos());
            cpuAtEnd = processCpuNanos();
            processAtEnd = ClientProcess.ofThisProcess();
        } finally {
            windowRead.countDown();
        }
        long compiledInWindow = JitCompiler.compilationMillis() - compiledBefore;
        if (compiledInWindow > window.toMillis() / 100) {
            log.warn("{} with {} caller(s): the JIT compiled for {} ms during the {} s window; its CPU is in the client's",
                    name, callers, compiledInWindow, window.toSeconds());
        }

        awaitCallers(threads, from + window.toNanos(), name + ": a caller was still inside a call " + STRAGGLER_GRACE.toSeconds()
                + " s after the measured window ended; the database or broker may be stuck");
        Histogram all = Measurement.newLatencyHistogram();
        histograms.forEach(all::add);
        long end = from;
        for (long returned : lastReturn) {
            end = Math.max(end, returned);
        }
        Measurement measured = Measurement.of(all, (end - from) / 1e9, errors.get(), firstError.get());
        return measured.withClient(ClientProcess.costPerOperation(cpuAtEnd - cpuAtStart, processAtStart, processAtEnd,
                measured.operations()));
    }

    private static void sleepUntil(long nanoTime) throws InterruptedException {
        long left;
        while ((left = nanoTime - System.nanoTime()) > 0) {
            Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
    }

    /** CPU time of this whole JVM so far, in nanoseconds. */
    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /**
     * Waits for callers told to stop at {@code endNanos} until {@link #STRAGGLER_GRACE} after it; a caller still
     * in a call then is reported as stuck ({@code stuck}), after every caller is interrupted.
     */
    static void awaitCallers(List<Thread> threads, long endNanos, String stuck) throws InterruptedException {
        long deadline = endNanos + STRAGGLER_GRACE.toNanos();
        for (Thread thread : threads) {
            thread.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            if (thread.isAlive()) {
                threads.forEach(Thread::interrupt);
                throw new IllegalStateException(stuck);
            }
        }
    }

    /** Runs {@code call} once: true when it returned, false (counted in {@code errors}) when it threw. */
    static boolean callOnce(Call call, AtomicLong errors, AtomicReference<String> firstError) {
        try {
            call.run();
            return true;
        } catch (Exception e) {
            errors.incrementAndGet();
            firstError.compareAndSet(null, e.toString());
            return false;
        }
    }
}

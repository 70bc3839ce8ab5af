package dev.idempotency.benchmarks.harness;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;

/**
 * This JVM's JIT compiler, watched so that a Java cell's window starts only once it has gone quiet.
 * On two shared cores C2 still compiled the executor's path at about a tenth of the machine 20 s
 * into a run (2026-11-25), so a window opened by the clock alone measured the compiler, not the
 * library, and a service runs long past that point.
 */
final class JitCompiler {
    /** How long each look at the compiler lasts. */
    static final Duration PROBE = Duration.ofSeconds(2);
    /** Quiet: less compiling than this during each of {@link #QUIET_PROBES} probes in a row, 1% of one core. */
    static final long QUIET_MILLIS = 20;
    /** Compiling comes in bursts: one quiet probe was seen followed by seconds of C2 work. */
    static final int QUIET_PROBES = 2;

    private JitCompiler() {
    }

    /**
     * Returns once the compiler spent less than {@link #QUIET_MILLIS} compiling during each of the
     * last {@link #QUIET_PROBES} {@link #PROBE}s, or once {@code within} has passed: the most it
     * compiled during one of those probes (0 when the JVM does not report compile time, or
     * {@code within} is zero).
     */
    static long awaitQuiet(Duration within) throws InterruptedException {
        if (within.isZero() || compilationMillis() < 0) {
            return 0;
        }
        long deadline = System.nanoTime() + within.toNanos();
        long[] recent = new long[QUIET_PROBES];
        Arrays.fill(recent, Long.MAX_VALUE);
        for (int probe = 0; ; probe++) {
            long before = compilationMillis();
            Thread.sleep(PROBE.toMillis());
            recent[probe % QUIET_PROBES] = compilationMillis() - before;
            long busiest = Arrays.stream(recent).max().orElse(0);
            if (busiest < QUIET_MILLIS || System.nanoTime() - deadline >= 0) {
                return busiest == Long.MAX_VALUE ? recent[probe % QUIET_PROBES] : busiest;
            }
        }
    }

    /** Milliseconds this JVM has spent compiling so far; -1 when it does not say. */
    static long compilationMillis() {
        CompilationMXBean compiler = ManagementFactory.getCompilationMXBean();
        return compiler != null && compiler.isCompilationTimeMonitoringSupported() ? compiler.getTotalCompilationTime() : -1;
    }
}

package dev.idempotency.benchmarks;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;

/**
 * This JVM's JIT compiler, watched so that a Java cell's window starts only once it has gone quiet.
 * On two shared cores C2 still compiled the executor's path at about a tenth of the machine 20 s
 * into a run (2026-11-25), so a window opened by the clock alone measured the compiler, not the
 * library, and a service runs long past that point.
 */
final class JitCompiler {
    /** How long each look at the compiler lasts. */
    static final Duration PROBE = Duration.ofSeconds(2);
    /** Quiet: less compiling than this during one probe, 1% of one core. */
    static final long QUIET_MILLIS = 20;

    private JitCompiler() {
    }

    /**
     * Returns once the compiler spent less than {@link #QUIET_MILLIS} compiling during the last
     * {@link #PROBE}, or once {@code within} has passed: the milliseconds it compiled during that last
     * probe (0 when the JVM does not report compile time, or {@code within} is zero).
     */
    static long awaitQuiet(Duration within) throws InterruptedException {
        CompilationMXBean compiler = ManagementFactory.getCompilationMXBean();
        if (within.isZero() || compiler == null || !compiler.isCompilationTimeMonitoringSupported()) {
            return 0;
        }
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            long before = compiler.getTotalCompilationTime();
            Thread.sleep(PROBE.toMillis());
            long compiled = compiler.getTotalCompilationTime() - before;
            if (compiled < QUIET_MILLIS || System.nanoTime() - deadline >= 0) {
                return compiled;
            }
        }
    }
}

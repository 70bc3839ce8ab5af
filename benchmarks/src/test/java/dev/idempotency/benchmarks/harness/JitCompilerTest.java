package dev.idempotency.benchmarks.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class JitCompilerTest {
    @Test
    void aZeroBoundOpensTheWindowAtOnce() throws InterruptedException {
        long started = System.nanoTime();
        assertEquals(0, JitCompiler.awaitQuiet(Duration.ZERO));
        assertTrue(System.nanoTime() - started < Duration.ofMillis(500).toNanos());
    }

    @Test
    void aBusyCompilerIsWaitedForNoLongerThanTheBoundAndOneProbe() throws InterruptedException {
        Thread busy = new Thread(JitCompilerTest::compileWhileRunning, "keeps-the-jit-busy");
        busy.setDaemon(true);
        busy.start();
        long started = System.nanoTime();
        JitCompiler.awaitQuiet(Duration.ofSeconds(1));
        busy.interrupt();
        long waited = System.nanoTime() - started;
        assertTrue(waited < Duration.ofSeconds(1).plus(JitCompiler.PROBE).plusSeconds(1).toNanos(),
                "waited " + Duration.ofNanos(waited));
    }

    /** Formats and hashes numbers in a loop, hot code the compiler picks up while the probe watches. */
    private static void compileWhileRunning() {
        long sink = 0;
        while (!Thread.currentThread().isInterrupted()) {
            for (int i = 0; i < 10_000; i++) {
                sink += Long.toString(i * 31L).hashCode();
            }
        }
        if (sink == 42) {
            System.out.print("");
        }
    }
}

package dev.idempotency.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class ContextSwitchesTest {
    @Test
    void aThreadThatSleepsIsCountedOnceAtLeastPerSleep() throws InterruptedException {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no Linux /proc here");
        OptionalLong before = ContextSwitches.ofThisProcess();
        for (int i = 0; i < 20; i++) {
            Thread.sleep(1);
        }
        OptionalLong after = ContextSwitches.ofThisProcess();

        assertTrue(ContextSwitches.perOperation(before, after, 20) >= 1.0, before + " then " + after);
    }

    @Test
    void aProcessThatIsGoneHasNoFigure() {
        assertTrue(ContextSwitches.of(Long.MAX_VALUE).isEmpty());
        assertTrue(Double.isNaN(ContextSwitches.perOperation(OptionalLong.of(5), OptionalLong.empty(), 10)));
        assertTrue(Double.isNaN(ContextSwitches.perOperation(OptionalLong.of(5), OptionalLong.of(9), 0)));
        assertEquals(0.5, ContextSwitches.perOperation(OptionalLong.of(5), OptionalLong.of(9), 8));
    }
}

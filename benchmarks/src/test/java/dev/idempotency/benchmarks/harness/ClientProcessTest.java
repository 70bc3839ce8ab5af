package dev.idempotency.benchmarks.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ClientProcessTest {
    @Test
    void aThreadThatSleepsIsCountedOnceAtLeastPerSleep() throws InterruptedException {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no Linux /proc here");
        Optional<ClientProcess.Reading> before = ClientProcess.ofThisProcess();
        for (int i = 0; i < 20; i++) {
            Thread.sleep(1);
        }
        Optional<ClientProcess.Reading> after = ClientProcess.ofThisProcess();

        assertTrue(ClientProcess.costPerOperation(0, before, after, 20).switches() >= 1.0, before + " then " + after);
    }

    @Test
    void aThreadThatEndsBetweenTwoReadingsTakesOnlyItsOwnSwitchesAlong() throws InterruptedException {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no Linux /proc here");
        Thread busy = new Thread(() -> {
            for (int i = 0; i < 200; i++) {
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        busy.start();
        Thread.sleep(150);
        Optional<ClientProcess.Reading> before = ClientProcess.ofThisProcess();
        busy.join();
        Optional<ClientProcess.Reading> after = ClientProcess.ofThisProcess();

        // Summed over the threads alive at each reading, the ended thread's ~150 earlier switches came out negative.
        assertTrue(ClientProcess.costPerOperation(0, before, after, 1).switches() >= 0, before + " then " + after);

        ClientProcess.Reading earlier = new ClientProcess.Reading(0, Map.of(1L, 100L, 2L, 5L));
        ClientProcess.Reading later = new ClientProcess.Reading(0, Map.of(2L, 7L, 3L, 4L));
        // Thread 1 ended (missed, not subtracted), thread 2 added 2, thread 3 started and made 4.
        assertEquals(6, later.switchesSince(earlier));
    }

    @Test
    void userTimeGrowsWithWorkInUserMode() {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no Linux /proc here");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Optional<ClientProcess.Reading> before = ClientProcess.ofThisProcess();
        // 300 ms of this thread's own user time, however long a shared machine takes to give it that much.
        long userUntil = threads.getCurrentThreadUserTime() + 300_000_000L;
        long sink = 0;
        while (threads.getCurrentThreadUserTime() < userUntil) {
            sink += Long.toString(sink).length();
        }
        Optional<ClientProcess.Reading> after = ClientProcess.ofThisProcess();

        // 300 ms of spinning in user mode; the ticks are 10 ms.
        assertTrue(ClientProcess.costPerOperation(0, before, after, 1).userMicros() >= 150_000, before + " then " + after + " " + sink);
    }

    @Test
    void aProcessThatIsGoneHasNoFigure() {
        Optional<ClientProcess.Reading> some = Optional.of(new ClientProcess.Reading(100, Map.of(1L, 5L)));
        Optional<ClientProcess.Reading> later = Optional.of(new ClientProcess.Reading(500, Map.of(1L, 9L)));
        assertTrue(ClientProcess.of(Long.MAX_VALUE).isEmpty());
        assertTrue(Double.isNaN(ClientProcess.costPerOperation(8_000, some, Optional.empty(), 10).switches()));
        assertTrue(Double.isNaN(ClientProcess.costPerOperation(8_000, some, later, 0).userMicros()));
        assertEquals(new ClientCost(1.0, 50.0, 0.5), ClientProcess.costPerOperation(8_000, some, later, 8));
    }
}

package dev.idempotency.benchmarks.harness;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a client process has spent so far, from Linux's {@code /proc}: the CPU time it ran in user
 * mode (its own code, not the kernel's on its behalf) and how often its threads were switched off a
 * CPU, voluntarily (blocked, e.g. on a socket read) or not. A client thread blocked on each round trip
 * is switched out once per round trip; one serving many connections from one {@code poll} (pgbench)
 * mostly finds the next answer waiting. Switches are counted per thread, so a thread that ends between
 * two readings takes only its own along (its switches in the window are missed, never subtracted): read
 * it around a window in which the threads that do the work live throughout.
 */
final class ClientProcess {
    /** Linux reports process times in clock ticks of 1/100 s (USER_HZ, fixed for /proc on every architecture we run on). */
    private static final long MICROS_PER_TICK = 10_000;
    /** utime's position in /proc/<pid>/stat, counted from the state field that follows the command name. */
    private static final int UTIME_AFTER_COMMAND = 11;

    /** One reading: user CPU time in microseconds since the process started, and each live thread's context switches. */
    record Reading(long userMicros, Map<Long, Long> switchesByThread) {
        /** What a process has spent when it starts. */
        static final Reading AT_START = new Reading(0, Map.of());

        Reading {
            switchesByThread = Map.copyOf(switchesByThread);
        }

        /**
         * The switches of this reading's threads since {@code earlier}: a thread in both, what it added; a
         * thread started since (or whose id was reused), all of its own.
         */
        long switchesSince(Reading earlier) {
            long sum = 0;
            for (Map.Entry<Long, Long> thread : switchesByThread.entrySet()) {
                long before = earlier.switchesByThread.getOrDefault(thread.getKey(), 0L);
                sum += thread.getValue() >= before ? thread.getValue() - before : thread.getValue();
            }
            return sum;
        }
    }

    private ClientProcess() {
    }

    /** A reading of process {@code pid}; empty where there is no {@code /proc} or the process is gone. */
    static Optional<Reading> of(long pid) {
        Path process = Path.of("/proc", Long.toString(pid));
        Map<Long, Long> switches = new HashMap<>();
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(process.resolve("task"))) {
            for (Path thread : threads) {
                long threadId = Long.parseLong(thread.getFileName().toString());
                switchesOf(thread.resolve("status")).ifPresent(count -> switches.put(threadId, count));
            }
            String stat = Files.readString(process.resolve("stat"));
            // The command name is in parentheses and may itself hold spaces or parentheses.
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Optional.of(new Reading(Long.parseLong(fields[UTIME_AFTER_COMMAND]) * MICROS_PER_TICK, switches));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** This JVM's. */
    static Optional<Reading> ofThisProcess() {
        return of(ProcessHandle.current().pid());
    }

    /**
     * What {@code operations} cost the client between two readings, with {@code cpuNanos} of CPU time
     * measured over the same span; {@link ClientCost#NONE} when nothing ran, and NaN user time and
     * switches when either reading is missing.
     */
    static ClientCost costPerOperation(long cpuNanos, Optional<Reading> before, Optional<Reading> after, long operations) {
        if (operations == 0) {
            return ClientCost.NONE;
        }
        double cpuMicros = cpuNanos / 1_000.0 / operations;
        if (before.isEmpty() || after.isEmpty()) {
            return new ClientCost(cpuMicros, Double.NaN, Double.NaN);
        }
        return new ClientCost(cpuMicros, (double) (after.get().userMicros() - before.get().userMicros()) / operations,
                (double) after.get().switchesSince(before.get()) / operations);
    }

    private static Optional<Long> switchesOf(Path status) {
        long sum = 0;
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:")) {
                    sum += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                }
            }
            return Optional.of(sum);
        } catch (IOException | NumberFormatException e) {
            // A thread that ended between the listing and the read: its counts are gone either way.
            return Optional.empty();
        }
    }
}

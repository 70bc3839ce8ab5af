package dev.idempotency.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * How often a process's threads have been switched off a CPU so far, voluntarily (blocked, e.g. on a
 * socket read) or not, from Linux's {@code /proc/<pid>/task/<tid>/status}. A client thread blocked on
 * each round trip is switched out once per round trip; one serving many connections from one
 * {@code poll} (pgbench) mostly finds the next answer waiting. Threads that end take their counts along,
 * so read it around a window in which the client's threads live throughout.
 */
final class ContextSwitches {
    private ContextSwitches() {
    }

    /** The sum over the threads of {@code pid}; empty where there is no {@code /proc} or the process is gone. */
    static OptionalLong of(long pid) {
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        long sum = 0;
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
            for (Path thread : threads) {
                sum += ofThread(thread.resolve("status"));
            }
        } catch (IOException e) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(sum);
    }

    /** This JVM's. */
    static OptionalLong ofThisProcess() {
        return of(ProcessHandle.current().pid());
    }

    /** Context switches per operation between two readings; NaN when either is missing or nothing ran. */
    static double perOperation(OptionalLong before, OptionalLong after, long operations) {
        if (before.isEmpty() || after.isEmpty() || operations == 0) {
            return Double.NaN;
        }
        return (double) (after.getAsLong() - before.getAsLong()) / operations;
    }

    private static long ofThread(Path status) {
        long sum = 0;
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:")) {
                    sum += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            // A thread that ended between the listing and the read: its counts are gone either way.
        }
        return sum;
    }
}

package dev.idempotency.benchmarks.sections;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

/**
 * What a relay cost the machine while it ran, in shares of all its cores: the relay's own JVM threads
 * (chosen by name, CPU time from ThreadMXBean) and its PostgreSQL backends (chosen by application_name,
 * CPU time from /proc, which only works when the server runs on this host). A steadier figure than the
 * writers' throughput ratio, which two cores shared by everyone make noisy.
 */
final class RelayCpu {
    /** Linux's USER_HZ: the unit of utime and stime in /proc/[pid]/stat. */
    private static final double CLOCK_TICKS_PER_SECOND = 100;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final Predicate<String> threadNames;
    private final String applicationName;
    private final Jdbi monitor;
    private final long startNanos;
    /** CPU so far of each matching thread (by id) and backend (by pid) at the start: only what they add counts. */
    private final Map<Long, Long> threadCpuAtStart;
    private final Map<Integer, Double> backendSecondsAtStart;

    private RelayCpu(Predicate<String> threadNames, String applicationName, DataSource monitor) {
        this.threadNames = threadNames;
        this.applicationName = applicationName;
        this.monitor = Jdbi.create(monitor);
        this.startNanos = System.nanoTime();
        this.threadCpuAtStart = threadCpuNanos();
        this.backendSecondsAtStart = backendCpuSeconds();
    }

    /** Starts counting now, before the relay starts: its threads by name, its backends by application_name. */
    static RelayCpu start(Predicate<String> threadNames, String applicationName, DataSource monitor) {
        return new RelayCpu(threadNames, applicationName, monitor);
    }

    /**
     * {@link #start} for the relay named {@code instanceId}: its threads are {@code outbox-relay-<role>-<instanceId>}
     * (worker, leases, publish), its backends its pool's {@code applicationName}.
     */
    static RelayCpu ofRelay(String instanceId, String applicationName, DataSource monitor) {
        return start(name -> name.startsWith("outbox-relay-") && name.endsWith("-" + instanceId), applicationName, monitor);
    }

    /** The shares since {@link #start}; read while the relay still runs (its threads and connections are live). */
    Share read() {
        double elapsed = (System.nanoTime() - startNanos) / 1e9 * Runtime.getRuntime().availableProcessors();
        // Per thread and per backend, so that one of an earlier cell that ends meanwhile cannot make the share negative.
        long threadNanos = 0;
        for (Map.Entry<Long, Long> thread : threadCpuNanos().entrySet()) {
            threadNanos += thread.getValue() - threadCpuAtStart.getOrDefault(thread.getKey(), 0L);
        }
        Map<Integer, Double> backends = backendCpuSeconds();
        double backendSeconds = Double.NaN;
        if (backends != null && backendSecondsAtStart != null) {
            backendSeconds = 0;
            for (Map.Entry<Integer, Double> backend : backends.entrySet()) {
                backendSeconds += backend.getValue() - backendSecondsAtStart.getOrDefault(backend.getKey(), 0.0);
            }
        }
        return new Share(threadNanos / 1e9 / elapsed, backendSeconds / elapsed);
    }

    /** Shares of the machine's cores: the relay's JVM threads, its backends (NaN when not readable). */
    record Share(double threads, double backends) {
        static final Share NONE = new Share(Double.NaN, Double.NaN);

        String describe() {
            if (Double.isNaN(threads)) {
                return "relay CPU not measured";
            }
            if (Double.isNaN(backends)) {
                return String.format(Locale.ROOT, "relay CPU: its threads %.1f%% of the machine (its backends not readable:"
                        + " the server is not on this host)", 100 * threads);
            }
            return String.format(Locale.ROOT, "relay CPU %.1f%% of the machine (its threads %.1f%%, its backends %.1f%%)",
                    100 * (threads + backends), 100 * threads, 100 * backends);
        }
    }

    private Map<Long, Long> threadCpuNanos() {
        Map<Long, Long> cpu = new HashMap<>();
        for (ThreadInfo info : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
            if (info != null && threadNames.test(info.getThreadName())) {
                cpu.put(info.getThreadId(), Math.max(0, THREADS.getThreadCpuTime(info.getThreadId())));
            }
        }
        return cpu;
    }

    /** CPU seconds of each backend with this application_name so far, by pid; null when /proc does not have them. */
    private Map<Integer, Double> backendCpuSeconds() {
        List<Integer> pids = monitor.withHandle(h -> h.createQuery(
                        "SELECT pid FROM pg_stat_activity WHERE application_name = :name")
                .bind("name", applicationName).mapTo(Integer.class).list());
        Map<Integer, Double> seconds = new HashMap<>();
        for (int pid : pids) {
            try {
                String stat = Files.readString(Path.of("/proc", Integer.toString(pid), "stat"));
                String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                seconds.put(pid, (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / CLOCK_TICKS_PER_SECOND);
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }
        return seconds;
    }
}

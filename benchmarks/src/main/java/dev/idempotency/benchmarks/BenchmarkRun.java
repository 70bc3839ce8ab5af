package dev.idempotency.benchmarks;

import dev.idempotency.core.IdempotencyConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What sections share during one run: the settings, the database and pgbench, the executor's
 * configuration, notes for under the table, and a cache of measured cells, so that a cell two
 * sections compare against (the executor at 8 callers, say) is measured once and shows the same
 * figures in both.
 */
final class BenchmarkRun {
    private static final Logger log = LoggerFactory.getLogger(BenchmarkRun.class);

    /** A cell's measurement, taken once per repetition from an emptied database. */
    @FunctionalInterface
    interface CellBody {
        Measurement measure() throws Exception;
    }

    private final BenchmarkSettings settings;
    private final BenchmarkDatabase database;
    private final Pgbench pgbench;
    private final IdempotencyConfig executorConfig;
    private final Map<String, Measurement> cells = new HashMap<>();
    private final Set<String> warmWorkloads = new HashSet<>();
    private final List<String> notes = new ArrayList<>();

    BenchmarkRun(BenchmarkSettings settings, BenchmarkDatabase database, Pgbench pgbench) {
        this.settings = settings;
        this.database = database;
        this.pgbench = pgbench;
        this.executorConfig = IdempotencyConfig.builder().schema(database.schema()).build();
    }

    BenchmarkSettings settings() {
        return settings;
    }

    BenchmarkDatabase database() {
        return database;
    }

    Pgbench pgbench() {
        return pgbench;
    }

    /** The executor's configuration in every cell: the library's defaults on the run's schema. */
    IdempotencyConfig executorConfig() {
        return executorConfig;
    }

    /**
     * The warm-up for a cell of the Java {@code workload}: the cell warm-up, plus the JIT warm-up
     * the first time the workload runs in this JVM.
     */
    Duration warmup(String workload) {
        Duration warmup = settings.warmup();
        return warmWorkloads.add(workload) ? warmup.plus(settings.jitWarmup()) : warmup;
    }

    /** Adds a line to print under the table (once, however many sections add it). */
    void note(String line) {
        if (!notes.contains(line)) {
            notes.add(line);
        }
    }

    List<String> notes() {
        return List.copyOf(notes);
    }

    /**
     * The median of {@link BenchmarkSettings#repeat()} measurements of a cell named {@code name}
     * at {@code callers}, each from emptied tables; measured on first request only.
     */
    Measurement cell(String name, int callers, CellBody body) throws Exception {
        String key = name + " @ " + callers;
        Measurement cached = cells.get(key);
        if (cached != null) {
            return cached;
        }
        List<Measurement> runs = new ArrayList<>();
        for (int i = 1; i <= settings.repeat(); i++) {
            log.info("measuring {} with {} caller(s), run {} of {}", name, callers, i, settings.repeat());
            database.reset();
            Measurement m = body.measure();
            if (m.errors() > 0) {
                log.warn("{} with {} caller(s): {} errors, the first: {}", name, callers, m.errors(), m.firstError());
            }
            runs.add(m);
        }
        Measurement median = Measurement.median(runs);
        cells.put(key, median);
        return median;
    }

    /** True when any measured cell counted an error. */
    boolean anyErrors() {
        return cells.values().stream().anyMatch(m -> m.errors() > 0);
    }
}

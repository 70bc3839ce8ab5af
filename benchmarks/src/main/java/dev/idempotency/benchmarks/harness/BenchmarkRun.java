package dev.idempotency.benchmarks.harness;

import dev.idempotency.core.IdempotencyConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What sections share during one run: the settings, the database and pgbench, the executor's
 * configuration, notes for under the table, and a cache of measured cells, so that a cell two
 * sections compare against (the executor at 8 callers, say) is measured once and shows the same
 * figures in both.
 */
public final class BenchmarkRun {
    private static final Logger log = LoggerFactory.getLogger(BenchmarkRun.class);

    /** A cell's measurement, taken once per repetition from an emptied database. */
    @FunctionalInterface
    public interface CellBody {
        Measurement measure() throws Exception;
    }

    private final BenchmarkSettings settings;
    private final BenchmarkDatabase database;
    private final Pgbench pgbench;
    private final IdempotencyConfig executorConfig;
    private final Map<String, Measurement> cells = new HashMap<>();
    private final Map<String, Object> cellFacts = new HashMap<>();
    private final Set<String> warmWorkloads = new HashSet<>();
    private final List<String> notes = new ArrayList<>();

    public BenchmarkRun(BenchmarkSettings settings, BenchmarkDatabase database, Pgbench pgbench) {
        this.settings = settings;
        this.database = database;
        this.pgbench = pgbench;
        this.executorConfig = IdempotencyConfig.builder().schema(database.schema()).build();
    }

    public BenchmarkSettings settings() {
        return settings;
    }

    public BenchmarkDatabase database() {
        return database;
    }

    public Pgbench pgbench() {
        return pgbench;
    }

    /** The executor's configuration in every cell: the library's defaults on the run's schema. */
    public IdempotencyConfig executorConfig() {
        return executorConfig;
    }

    /**
     * The warm-up for a cell of the Java {@code workload}: at least the cell warm-up, plus the JIT
     * warm-up the first time the workload runs in this JVM; a closed-loop cell then goes on until the
     * JIT compiler is quiet, within {@link BenchmarkSettings#jitQuietWithin()}.
     */
    public Warmup warmup(String workload) {
        Duration least = settings.warmup();
        return new Warmup(warmWorkloads.add(workload) ? least.plus(settings.jitWarmup()) : least, settings.jitQuietWithin());
    }

    /** Adds a line to print under the table (once, however many sections add it). */
    public void note(String line) {
        if (!notes.contains(line)) {
            notes.add(line);
        }
    }

    List<String> notes() {
        return List.copyOf(notes);
    }

    /** A cell: what it measures, at how many callers, and how. */
    public record Cell(String name, int callers, CellBody body) {
        String key() {
            return key(name, callers);
        }

        static String key(String name, int callers) {
            return name + " @ " + callers;
        }
    }

    /**
     * What the cell {@code name} at {@code callers} learned besides its figures (what a relay beside
     * it published, say): one object per cell in a run, kept with its cached measurement, so that
     * every section showing the cell reports what its body saw, not an object no body filled.
     */
    public <T> T cellFacts(String name, int callers, Class<T> type, Supplier<T> create) {
        return type.cast(cellFacts.computeIfAbsent(Cell.key(name, callers), key -> create.get()));
    }

    /**
     * The median of {@link BenchmarkSettings#repeat()} measurements of a cell named {@code name}
     * at {@code callers}, each from emptied tables; measured on first request only.
     */
    public Measurement cell(String name, int callers, CellBody body) throws Exception {
        return cell(new Cell(name, callers, body));
    }

    /** The median of {@code cell}'s measurements, as {@link #cell(String, int, CellBody)}. */
    public Measurement cell(Cell cell) throws Exception {
        return interleaved(List.of(cell)).get(0);
    }

    /**
     * The medians of cells compared with each other, measured in rounds: each round measures every
     * cell not measured before in this run, once, from emptied tables, so a change of the shared
     * machine's speed during the run falls on all of them alike instead of on whichever came last.
     * Each round starts one cell further along the list (A B, then B A), so that no cell always runs
     * first: in a fixed order, the second of two identical executor cells made 1.05 and 1.10 of the
     * first (2026-12-07, two runs of 5 rounds), as much as some differences measured. Returned in the
     * order given; cached like {@link #cell}.
     */
    public List<Measurement> interleaved(List<Cell> group) throws Exception {
        List<Cell> fresh = group.stream().filter(c -> !cells.containsKey(c.key())).toList();
        Map<String, List<Measurement>> runs = new HashMap<>();
        for (int i = 1; i <= settings.repeat(); i++) {
            for (Cell cell : roundOrder(fresh, i)) {
                log.info("measuring {} with {} caller(s), run {} of {}", cell.name(), cell.callers(), i, settings.repeat());
                database.reset();
                Measurement m = cell.body().measure();
                log.info("{} with {} caller(s), run {} of {}: {} ops/s, p50 {} ms", cell.name(), cell.callers(), i,
                        settings.repeat(), String.format(Locale.ROOT, "%.0f", m.opsPerSecond()),
                        String.format(Locale.ROOT, "%.3f", m.p50Millis()));
                if (m.errors() > 0) {
                    log.warn("{} with {} caller(s): {} errors, the first: {}", cell.name(), cell.callers(), m.errors(),
                            m.firstError());
                }
                runs.computeIfAbsent(cell.key(), k -> new ArrayList<>()).add(m);
            }
        }
        runs.forEach((key, measured) -> cells.put(key, Measurement.median(measured)));
        return group.stream().map(c -> cells.get(c.key())).toList();
    }

    /** The cells of round {@code round} (from 1): the list rotated to start at its {@code (round - 1)}-th cell. */
    static <T> List<T> roundOrder(List<T> cells, int round) {
        List<T> order = new ArrayList<>(cells);
        Collections.rotate(order, 1 - round);
        return order;
    }

    /**
     * Measures, for each caller count, the cells that all of {@code sections} compare ({@link Section#cells})
     * in the same rounds, so that a ratio against a cell another section also uses (the executor's, say)
     * compares cells measured side by side, not minutes apart. A section that cannot list its cells,
     * or a measurement that fails here, is left to the sections' own runs, which report it.
     */
    void measureTogether(List<Section> sections) {
        for (int callers : settings.callers()) {
            Map<String, Cell> group = new LinkedHashMap<>();
            for (Section section : sections) {
                try {
                    section.cells(this, callers).forEach(cell -> group.putIfAbsent(cell.key(), cell));
                } catch (Exception e) {
                    log.warn("{}: cannot list its cells with {} caller(s) ({}); it measures on its own", section.title(),
                            callers, e.getMessage());
                }
            }
            try {
                interleaved(List.copyOf(group.values()));
            } catch (Exception e) {
                log.warn("measuring the sections' cells together with {} caller(s) failed; each section measures its own",
                        callers, e);
            }
        }
    }

    /** True when any measured cell counted an error. */
    boolean anyErrors() {
        return cells.values().stream().anyMatch(m -> m.errors() > 0);
    }
}

package dev.idempotency.benchmarks.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.testing.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** The order in which a run measures the cells its sections compare, against the test PostgreSQL. */
class BenchmarkRunTest {

    @Test
    void cellsOfDifferentSectionsAreMeasuredInTheSameRoundsEachStartingOneCellFurtherAndSharedCellsOnce() throws Exception {
        TestDatabase server = TestDatabase.get();
        BenchmarkSettings settings = BenchmarkSettings.builder().jdbcUrl(server.url()).dbUser(server.user())
                .dbPassword(server.password()).callers(List.of(1, 2)).repeat(2).build();
        List<String> measured = new ArrayList<>();
        Section pgbench = section(callers -> List.of(cell("executor", callers, measured), cell("pgbench", callers, measured)));
        Section redis = section(callers -> List.of(cell("executor", callers, measured), cell("redis", callers, measured)));
        try (BenchmarkDatabase database = BenchmarkDatabase.create(settings)) {
            Pgbench unused = new Pgbench(settings.pgbenchExecutable(), database.libpqEnvironment(), database.schema());
            try {
                BenchmarkRun run = new BenchmarkRun(settings, database, unused);

                run.measureTogether(List.of(pgbench, redis));
                // What the sections then ask for comes from those rounds, not from new measurements.
                run.interleaved(redis.cells(run, 1));
                run.interleaved(pgbench.cells(run, 2));
            } finally {
                unused.deleteFiles();
            }
        }

        assertEquals(List.of(
                "executor @ 1", "pgbench @ 1", "redis @ 1", "pgbench @ 1", "redis @ 1", "executor @ 1",
                "executor @ 2", "pgbench @ 2", "redis @ 2", "pgbench @ 2", "redis @ 2", "executor @ 2"), measured);
    }

    private static BenchmarkRun.Cell cell(String name, int callers, List<String> measured) {
        return new BenchmarkRun.Cell(name, callers, () -> {
            measured.add(name + " @ " + callers);
            return new Measurement(1, 1, 1, 1, ClientCost.NONE, 0, null);
        });
    }

    private static Section section(IntFunction<List<BenchmarkRun.Cell>> cells) {
        return new Section() {
            @Override
            public String name() {
                return "test";
            }

            @Override
            public String title() {
                return "test";
            }

            @Override
            public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
                return cells.apply(callers);
            }

            @Override
            public List<ResultRow> run(BenchmarkRun run) {
                return List.of();
            }
        };
    }
}

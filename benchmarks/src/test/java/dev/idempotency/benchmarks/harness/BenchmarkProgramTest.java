package dev.idempotency.benchmarks.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idempotency.testing.PrivatePgBouncer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the program for about a second per cell against the test PostgreSQL (and the local Redis
 * where it answers) to prove each section measures and prints its rows. It asserts no timing: the
 * figures and target verdicts are whatever this machine gives.
 */
class BenchmarkProgramTest {

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void postgresSectionsPrintEveryRowWithoutErrors() {
        ProgramRun run = ProgramRun.of("--sections=storm,pgbench,overhead", "--seconds=1", "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=0", "--callers=1", "--storm-callers=4");

        assertEquals(0, run.exitCode(), run.output());
        assertTrue(run.output().contains("command: java -jar benchmarks/target/benchmarks.jar --sections=storm,pgbench,overhead"),
                run.output());
        assertFalse(run.output().contains("FAILED"), run.output());
        assertFalse(run.output().contains("ERRORS"), run.output());

        List<String> pgbench = run.rows("1 executor vs pgbench");
        assertEquals(6, pgbench.size(), run.output());
        assertTrue(pgbench.get(0).contains("executor.run"), run.output());
        for (String row : pgbench.subList(1, 6)) {
            assertTrue(row.matches(".*ours/this: ops \\d+\\.\\d\\d, p50 \\d+\\.\\d\\d.*"), row);
        }
        assertTrue(pgbench.get(4).matches(".*pgjdbc's BEGIN.*client CPU \\d+\\.\\d\\d.*"), pgbench.get(4));
        assertTrue(pgbench.get(5).matches(".*plain JDBC.*client CPU \\d+\\.\\d\\d; this/executor.sql: ops \\d+\\.\\d\\d.*"),
                pgbench.get(5));
        // Issue 14's target applies from one caller on.
        assertTrue(pgbench.get(1).matches(".*executor.sql.*(met|NOT MET): ops ratio >= 0.95.*"), pgbench.get(1));
        List<String> overhead = run.rows("2 executor vs bare tx");
        assertEquals(3, overhead.size(), run.output());
        assertTrue(overhead.get(1).matches(".*executor adds p50 [+-]\\d+\\.\\d{3} ms.*(met|NOT MET): added p50 < 0.3 ms.*"),
                overhead.get(1));
        assertTrue(overhead.get(2).matches(".*pgbench executor.sql adds p50 [+-]\\d+\\.\\d{3} ms.*"), overhead.get(2));
        // Sections print in the table's order, whatever order they were asked in.
        assertTrue(run.output().indexOf("1 executor vs pgbench") < run.output().indexOf("4 duplicate storm"), run.output());
        List<String> storm = run.rows("4 duplicate storm");
        assertEquals(2, storm.size(), run.output());
        assertTrue(storm.get(0).matches(".*one executor.* [1-9]\\d* rounds, 0 errors; all callers started within \\d+\\.\\d\\d ms.*"),
                storm.get(0));
        assertTrue(storm.get(1).matches(".*4 executors.* [1-9]\\d* rounds, 0 errors.*"), storm.get(1));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void redisSectionComparesTheExecutorWithARedisCheckInMarkdown() {
        assumeTrue(redisAnswers(), "no Redis on 127.0.0.1:6379; start redis-server to run this test");

        ProgramRun run = ProgramRun.of("--sections=redis", "--seconds=1", "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=0", "--callers=2", "--markdown");

        assertEquals(0, run.exitCode(), run.output());
        assertTrue(run.output().contains("|section|measured|callers|ops/s|p50 ms|p99 ms|client CPU us/op|client user us/op|client switches/op|compared|target|"), run.output());
        List<String> rows = run.rows("|3 executor vs Redis check");
        assertEquals(2, rows.size(), run.output());
        if (Files.isDirectory(Path.of("/proc/self/task"))) {
            // Every caller of the executor and of the Redis pattern blocks on each round trip: at least one switch per call.
            for (String row : rows) {
                String[] cells = row.split("\\|");
                assertTrue(Double.parseDouble(cells[9]) >= 1.0, row);
                // Some of each call's CPU is its own code's, and none of it more than the whole.
                assertTrue(Double.parseDouble(cells[8]) > 0 && Double.parseDouble(cells[8]) <= Double.parseDouble(cells[7]) * 1.1, row);
            }
        }
        assertTrue(rows.get(1).matches(".*ours/this: ops \\d+\\.\\d\\d.*(met|NOT MET): ops ratio >= 1.00.*"), rows.get(1));
        assertTrue(run.output().contains("- Section 3: Redis "), run.output());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void pgbouncerSectionMeasuresTheExecutorThroughPgBouncerInBothSettingsBesideItsDirectConnection() {
        try (PrivatePgBouncer pgbouncer = PrivatePgBouncer.startTrackingStatements(4, 100)) {
            ProgramRun run = ProgramRun.of("--sections=pgbouncer", "--pgbouncer-url=" + pgbouncer.jdbcUrl(""), "--seconds=1",
                    "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=0", "--callers=2");

            assertEquals(0, run.exitCode(), run.output());
            assertFalse(run.output().contains("FAILED"), run.output());
            assertFalse(run.output().contains("ERRORS"), run.output());
            List<String> rows = run.rows("11 executor behind PgBouncer");
            assertEquals(4, rows.size(), run.output());
            assertTrue(rows.get(0).contains("executor.run: payment"), rows.get(0));
            assertTrue(rows.get(1).matches(".*plain URL.*ours/this: ops \\d+\\.\\d\\d, p50 \\d+\\.\\d\\d.*"), rows.get(1));
            assertTrue(rows.get(2).matches(".*prepareThreshold=0.*plain URL/this: ops \\d+\\.\\d\\d, p50 \\d+\\.\\d\\d.*"), rows.get(2));
            assertTrue(rows.get(3).matches(".*pgbench executor.sql through PgBouncer.*plain URL/this: ops \\d+\\.\\d\\d; "
                    + "prepareThreshold=0/this: ops \\d+\\.\\d\\d.*"), rows.get(3));
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void keyLockSectionMeasuresTheExecutorAndExecutorSqlWithAndWithoutTheTrigger() {
        ProgramRun run = ProgramRun.of("--sections=keylock", "--seconds=1", "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=0",
                "--callers=1");

        assertEquals(0, run.exitCode(), run.output());
        assertFalse(run.output().contains("FAILED"), run.output());
        assertFalse(run.output().contains("ERRORS"), run.output());
        List<String> rows = run.rows("12 outbox key-lock trigger (V8)");
        assertEquals(4, rows.size(), run.output());
        assertTrue(rows.get(0).contains("executor.run: payment"), rows.get(0));
        assertTrue(rows.get(1).matches(".*without V8's key-lock trigger.*with trigger/without: ops \\d+\\.\\d\\d, p50 \\d+\\.\\d\\d.*"),
                rows.get(1));
        assertTrue(rows.get(3).matches(".*pgbench executor.sql, outbox without.*with trigger/without: ops \\d+\\.\\d\\d.*"),
                rows.get(3));
    }

    @Test
    void invalidOptionsAreRefusedWithUsageExitCodeNamingTheSetting() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exitCode = BenchmarkMain.run(new String[] {"--sections=pgbench,nosuch"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(2, exitCode);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("benchmarks: sections: unknown section 'nosuch'"),
                err.toString(StandardCharsets.UTF_8));
        assertEquals("", out.toString(StandardCharsets.UTF_8));
    }

    private static boolean redisAnswers() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", 6379), 1_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}

package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the HTTP section (10) for a second per cell against the test PostgreSQL to prove it serves
 * the plain and the keyed POST, replays stored keys, and prints its three rows without errors.
 * No timing is asserted.
 */
class HttpSectionProgramTest {

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void httpSectionPrintsPlainKeyedAndReplayedPostWithoutErrors() {
        ProgramRun run = ProgramRun.of("--sections=http", "--seconds=1", "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=0", "--callers=2");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("10 http cost")).toList();
        assertEquals(3, rows.size(), output);
        assertTrue(rows.get(0).contains(HttpCost.PLAIN_CELL), rows.get(0));
        assertTrue(rows.get(1).matches(".*" + Pattern.quote(HttpCost.KEYED_CELL) + " +2 .*req/s \\d+\\.\\d\\d of plain POST; adds p50 [-+]\\d+\\.\\d{3} ms.*"),
                rows.get(1));
        assertTrue(rows.get(2).matches(".*" + Pattern.quote(HttpCost.REPLAY_CELL) + " +2 .*req/s \\d+\\.\\d\\d of plain POST; adds p50 [-+]\\d+\\.\\d{3} ms.*"),
                rows.get(2));
    }
}

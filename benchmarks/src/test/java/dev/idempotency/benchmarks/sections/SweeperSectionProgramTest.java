package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the sweeper section (8) with tiny tables against the test PostgreSQL to prove it rotates a
 * consumed generation (keeping the current one), rotates under writers with a relay draining, purges
 * every key past retention, keeps the rest, and prints its five rows. No timing is asserted.
 */
class SweeperSectionProgramTest {

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void sweeperSectionRotatesAGenerationRotatesUnderWritersAndPurgesKeysAtTwoSettings() {
        ProgramRun run = ProgramRun.of("--sections=sweeper", "--sweeper-rows=2000", "--seconds=2", "--warmup=0", "--jit-warmup=0",
                "--jit-quiet-within=0");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("8 sweeper throughput")).toList();
        assertEquals(5, rows.size(), output);
        assertTrue(rows.get(0).matches(".*rotate: truncate a consumed generation of 2000 events +1 +\\d+ .*\\d+ ms for the sweepOnce\\(\\) that rotated.*"),
                rows.get(0));
        assertTrue(rows.get(1).contains("1 relay draining it"), rows.get(1));
        assertTrue(rows.get(2).matches(".*sweeper rotating every 1 s +8 .*with/without rotations: ops \\d+\\.\\d\\d.* \\d+ rotations removed \\d+ events.*"),
                rows.get(2));
        assertTrue(rows.get(3).matches(".*purge 2000 expired keys, defaults +1 +\\d+ .*batches of \\d+, at most \\d+ per sweep, every \\d+ s: "
                + "sustains \\d+ rows/s +(met|NOT MET): sustained >= \\d+ rows/s.*"), rows.get(3));
        assertTrue(rows.get(4).contains("purge 2000 expired keys, larger"), rows.get(4));
    }
}

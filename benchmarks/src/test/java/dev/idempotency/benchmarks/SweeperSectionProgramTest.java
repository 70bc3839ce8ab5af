package dev.idempotency.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the sweeper section (8) with a tiny table against the test PostgreSQL to prove it purges
 * every row past retention, keeps the rest, and prints its four rows. No timing is asserted.
 */
class SweeperSectionProgramTest {

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void sweeperSectionPurgesEventsAndKeysAtTwoSettingsAndPrintsWhatTheySustain() {
        ProgramRun run = ProgramRun.of("--sections=sweeper", "--sweeper-rows=2000");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("8 sweeper throughput")).toList();
        assertEquals(4, rows.size(), output);
        assertTrue(rows.get(0).matches(".*purge 2000 published events, defaults +1 +\\d+ .*batches of \\d+, at most \\d+ per sweep, every \\d+ s: "
                + "sustains \\d+ rows/s +(met|NOT MET): sustained >= \\d+ rows/s.*"), rows.get(0));
        assertTrue(rows.get(1).contains("purge 2000 published events, larger"), rows.get(1));
        assertTrue(rows.get(2).contains("purge 2000 expired keys, defaults"), rows.get(2));
        assertTrue(rows.get(3).contains("purge 2000 expired keys, larger"), rows.get(3));
    }
}

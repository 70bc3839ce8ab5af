package dev.idempotency.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the relay cost section (9) for about a second per cell and a 2,000-event drain against the
 * test PostgreSQL to prove it prints the writers' ratio with its target, WAL bytes per event and the
 * dead tuples the drain left. No timing is asserted.
 */
class RelayCostSectionProgramTest {

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void relayCostSectionPrintsWritersRatioWalPerEventAndDeadTuples() {
        ProgramRun run = ProgramRun.of("--sections=relaycost", "--seconds=1", "--warmup=0", "--jit-warmup=0",
                "--relay-cost-events=2000", "--relay-keys=100");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("9 relay cost")).toList();
        assertEquals(4, rows.size(), output);
        assertTrue(rows.get(0).matches(".*executor.run: payment \\+ outbox event, no relay +8 +[1-9]\\d* .*"), rows.get(0));
        assertTrue(rows.get(1).matches(".*1 relay draining it +8 +[1-9]\\d* .*with/without relay: ops \\d+\\.\\d\\d; "
                + "relay published [1-9]\\d*, \\d+ pending at the end +(met|NOT MET): ops ratio >= 0\\.90.*"), rows.get(1));

        Matcher wal = Pattern.compile("drain 2000 events: WAL bytes per event +1 +[1-9]\\d* .*WAL (\\d+\\.\\d) bytes/event").matcher(rows.get(2));
        assertTrue(wal.find(), rows.get(2));
        assertTrue(Double.parseDouble(wal.group(1)) > 0, rows.get(2));

        Matcher dead = Pattern.compile("drain 2000 events: dead tuples left in the outbox .*n_dead_tup (\\d+) \\(\\d+\\.\\d\\d per event\\); "
                + "n_tup_upd \\+(\\d+)").matcher(rows.get(3));
        assertTrue(dead.find(), rows.get(3));
        assertTrue(Long.parseLong(dead.group(1)) >= 0, rows.get(3));
        // Every event was marked once (at least once: maybe more), and the counters were read after that was counted.
        assertTrue(Long.parseLong(dead.group(2)) >= 2000, rows.get(3));
        assertFalse(rows.get(3).contains("INCOMPLETE"), rows.get(3));
    }
}

package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the relay cost section (9) for about a second per cell and a 2,000-event drain against the
 * test PostgreSQL to prove it prints the writers' ratio with its target, measured both in separate cells
 * and in slices of one load with the relay started and stopped between them (all its events published
 * at the end), WAL bytes per event and the dead tuples the drain left. No timing is asserted. The
 * sweeper section (8) runs first, as in a full run: it measures the cell with a relay that section 9
 * then shows, and section 9 must still report what that relay published and what it cost.
 */
class RelayCostSectionProgramTest {

    /** The relay's CPU share; its backends' part only where the server runs on this host (/proc). */
    private static final String RELAY_CPU = "relay CPU( \\d+\\.\\d% of the machine \\(its threads \\d+\\.\\d%, its backends \\d+\\.\\d%\\)"
            + "|: its threads \\d+\\.\\d% of the machine \\(its backends not readable[^)]*\\))";

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void relayCostSectionPrintsWritersRatioWhatTheRelayPublishedWalPerEventAndDeadTuples() {
        ProgramRun run = ProgramRun.of("--sections=sweeper,relaycost", "--sweeper-rows=2000", "--seconds=1", "--warmup=0",
                "--jit-warmup=0", "--jit-quiet-within=0", "--relay-cost-events=2000", "--relay-keys=100");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("9 relay cost")).toList();
        assertEquals(5, rows.size(), output);
        assertTrue(rows.get(0).matches(".*executor.run: payment \\+ outbox event, no relay +8 +[1-9]\\d* .*"), rows.get(0));
        assertTrue(rows.get(1).matches(".*1 relay draining it +8 +[1-9]\\d* .*with/without relay: ops \\d+\\.\\d\\d; "
                + RELAY_CPU + "; relay published [1-9]\\d*, \\d+ pending at the end +(met|NOT MET): ops ratio >= 0\\.95.*"), rows.get(1));
        Matcher cpu = Pattern.compile("its threads (\\d+\\.\\d)%").matcher(rows.get(1));
        assertTrue(cpu.find() && Double.parseDouble(cpu.group(1)) > 0, "the relay's threads used some CPU: " + rows.get(1));

        assertTrue(rows.get(2).matches(".*1 relay started and stopped between slices +8 +[1-9]\\d* .*with/without relay: ops \\d+\\.\\d\\d "
                + "over 1 pairs of 1 s slices \\(without the relay [1-9]\\d* ops/s; the pairs' ratios \\d+\\.\\d\\d, median \\d+\\.\\d\\d\\); "
                + "in the slices with it, " + RELAY_CPU + "; relay published [1-9]\\d*, 0 pending at the end +(met|NOT MET): ops ratio >= 0\\.95.*"),
                rows.get(2));
        assertFalse(rows.get(2).contains("ERRORS"), rows.get(2));

        Matcher wal = Pattern.compile("drain 2000 events: WAL bytes per event +1 +[1-9]\\d* .*whole cluster (\\d+\\.\\d) bytes/event")
                .matcher(rows.get(3));
        assertTrue(wal.find(), rows.get(3));
        assertTrue(Double.parseDouble(wal.group(1)) > 0, rows.get(3));

        Matcher deadTuples = Pattern.compile("drain 2000 events: dead tuples left in the outbox .*dead row versions made (\\d+) "
                + "\\(\\d+\\.\\d\\d per event: n_tup_upd \\+(\\d+)").matcher(rows.get(4));
        assertTrue(deadTuples.find(), rows.get(4));
        // The insert-only outbox: the drain updates or deletes no event row, so it makes no dead version.
        assertEquals(0, Long.parseLong(deadTuples.group(1)), rows.get(4));
        for (String row : rows.subList(3, 5)) {
            assertFalse(row.contains("INCOMPLETE"), row);
        }
    }
}

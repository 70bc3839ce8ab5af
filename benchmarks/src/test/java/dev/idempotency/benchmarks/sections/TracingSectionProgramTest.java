package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import dev.idempotency.benchmarks.harness.Section;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the tracing section (12) for a second per cell and 2,000-event drains against the test
 * PostgreSQL to prove it prints the executor with tracing off, API only and on, and the relay's drain
 * off and on, compared in the same run. No timing is asserted.
 */
class TracingSectionProgramTest {

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void tracingSectionPrintsTheExecutorAndTheRelayWithTracingOffAndOn() {
        ProgramRun run = ProgramRun.of("--sections=tracing", "--seconds=1", "--warmup=0", "--jit-warmup=0",
                "--jit-quiet-within=0", "--callers=2", "--relay-events=2000", "--relay-keys=100");
        int exitCode = run.exitCode();
        String output = run.output();

        assertEquals(0, exitCode, output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> rows = output.lines().filter(line -> line.startsWith("12 tracing on and off")).toList();
        assertEquals(5, rows.size(), output);
        assertTrue(rows.get(0).contains(TracingCost.OFF_CELL), rows.get(0));
        for (int row : new int[] {1, 2}) {
            assertTrue(rows.get(row).matches(".* +2 .*adds p50 [-+]\\d+\\.\\d{3} ms, p99 [-+]\\d+\\.\\d{3} ms; ops \\d+\\.\\d\\d of off.*"),
                    rows.get(row));
        }
        assertTrue(rows.get(1).contains(TracingCost.API_ONLY_CELL), rows.get(1));
        assertTrue(rows.get(2).contains(TracingCost.ON_CELL), rows.get(2));
        assertTrue(rows.get(3).matches(".*drain 2000 events to no-op publisher, tracing off +1 .*"), rows.get(3));
        assertTrue(rows.get(4).matches(".*drain 2000 events with context, send spans on +1 .*events/s \\d+\\.\\d\\d of off.*"),
                rows.get(4));
        assertTrue(Pattern.compile("Section 13: ").matcher(output).find(), output);
    }
}

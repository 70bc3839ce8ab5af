package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import org.opentest4j.TestAbortedException;

/** A missing tool skips the test with its one line, or fails it where tools are required (CI). */
@Isolated("sets a system property that MissingTool reads")
class MissingToolTest {
    @AfterEach
    void forgetTheSetting() {
        System.clearProperty(MissingTool.REQUIRED_VARIABLE);
    }

    @Test
    void aMissingToolSkipsTheTestWithTheLineNamingIt() {
        System.setProperty(MissingTool.REQUIRED_VARIABLE, "false");
        TestAbortedException skipped = assertThrows(TestAbortedException.class,
                () -> MissingTool.skip("no frobnicator: install Debian's package frob"));
        assertTrue(skipped.getMessage().endsWith("no frobnicator: install Debian's package frob"), skipped.getMessage());
    }

    @Test
    void whereToolsAreRequiredAMissingToolFailsTheTestWithTheSameLine() {
        System.setProperty(MissingTool.REQUIRED_VARIABLE, "true");
        IllegalStateException failed = assertThrows(IllegalStateException.class,
                () -> MissingTool.skip("no frobnicator: install Debian's package frob"));
        assertTrue(failed.getMessage().startsWith("no frobnicator: install Debian's package frob ("), failed.getMessage());
    }

    @Test
    void theConsoleLineNamesTheCountTheClassesAndTheReason() {
        assertEquals("skipped 9 tests (OutboxRelayPgBouncerTest, PgBouncerTest): no pgbouncer",
                SkippedTestsLine.line("no pgbouncer", 9, Set.of("PgBouncerTest", "OutboxRelayPgBouncerTest")));
        assertEquals("skipped 1 test (PgBouncerTest): no pgbouncer", SkippedTestsLine.line("no pgbouncer", 1, Set.of("PgBouncerTest")));
    }
}

package dev.idempotency.testing;

import org.junit.jupiter.api.Assumptions;

/**
 * A tool a test needs that is not on the machine (PgBouncer, a newer PgBouncer, ...): the test is
 * skipped with one line naming what is missing and how to get it, so that the README's test command
 * passes where only the services it lists run. CI sets {@value #REQUIRED_VARIABLE}, and there a
 * missing tool fails the test instead: CI provides every tool, and a skip would hide that it did not.
 */
public final class MissingTool {
    /** Environment variable (or system property) that, set to {@code true}, turns each skip into a failure. */
    public static final String REQUIRED_VARIABLE = "IDEMPOTENCY_TEST_TOOLS_REQUIRED";

    private MissingTool() {
    }

    /**
     * Skips the calling test (or, from {@code @BeforeAll}, its whole class) with {@code what} as the
     * reason; where tools are required, fails it with the same line. Never returns.
     */
    public static RuntimeException skip(String what) {
        if (required()) {
            throw new IllegalStateException(what + " (" + REQUIRED_VARIABLE + " is true: tools are required here)");
        }
        Assumptions.abort(what);
        throw new AssertionError("unreachable: abort throws");
    }

    static boolean required() {
        String value = System.getProperty(REQUIRED_VARIABLE, System.getenv(REQUIRED_VARIABLE));
        return Boolean.parseBoolean(value);
    }
}

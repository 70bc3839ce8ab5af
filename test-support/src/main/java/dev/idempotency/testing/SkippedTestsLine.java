package dev.idempotency.testing;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Says on the build's console, once per reason, which tests were skipped and why (a missing tool, a
 * service that does not answer): Maven Surefire counts skipped tests without their reasons and
 * leaves a class skipped from {@code @BeforeAll} out of its counts altogether. Registered for every
 * test run that has test-support on its class path (META-INF/services).
 *
 * <p>The line goes to the process's own standard error, which Surefire copies to the console, not to
 * {@code System.err}, which it redirects to a report file.
 */
public final class SkippedTestsLine implements TestExecutionListener {
    /** Reason → the classes whose tests were skipped for it, and how many tests. */
    private final Map<String, Skipped> byReason = new LinkedHashMap<>();
    private TestPlan plan;

    @Override
    public synchronized void testPlanExecutionStarted(TestPlan testPlan) {
        plan = testPlan;
        byReason.clear();
    }

    @Override
    public synchronized void executionSkipped(TestIdentifier identifier, String reason) {
        record(identifier, reason);
    }

    @Override
    public synchronized void executionFinished(TestIdentifier identifier, TestExecutionResult result) {
        if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
            record(identifier, result.getThrowable().map(Throwable::getMessage).orElse("aborted"));
        }
    }

    @Override
    public synchronized void testPlanExecutionFinished(TestPlan testPlan) {
        if (byReason.isEmpty()) {
            return;
        }
        // Not closed: that would close the process's standard error.
        PrintStream console = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        byReason.forEach((reason, skipped) -> console.println(line(reason, skipped.tests, skipped.classes)));
        console.flush();
    }

    /** What is printed for one reason: {@code skipped 9 tests (PgBouncerTest): no pgbouncer ...}. */
    static String line(String reason, int tests, Set<String> classes) {
        return "skipped " + tests + (tests == 1 ? " test (" : " tests (") + String.join(", ", new TreeSet<>(classes)) + "): " + reason;
    }

    private void record(TestIdentifier identifier, String reason) {
        Skipped skipped = byReason.computeIfAbsent(reason == null ? "no reason given" : reason, r -> new Skipped());
        skipped.classes.add(className(identifier));
        skipped.tests += identifier.isTest() ? 1 : testsUnder(identifier);
    }

    /** The tests a skipped class would have run, as far as the plan knows them before it runs. */
    private int testsUnder(TestIdentifier container) {
        return plan == null ? 0 : (int) plan.getDescendants(container).stream().filter(TestIdentifier::isTest).count();
    }

    private static String className(TestIdentifier identifier) {
        String name = identifier.getSource().map(source -> source instanceof MethodSource method ? method.getClassName()
                : source instanceof ClassSource type ? type.getClassName() : null).orElse(identifier.getDisplayName());
        return name.substring(name.lastIndexOf('.') + 1);
    }

    private static final class Skipped {
        final Set<String> classes = new TreeSet<>();
        int tests;
    }
}

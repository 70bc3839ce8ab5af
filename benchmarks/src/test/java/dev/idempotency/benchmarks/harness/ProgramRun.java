package dev.idempotency.benchmarks.harness;

import dev.idempotency.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** One in-process run of the benchmark program against the test database, and what it printed. */
public record ProgramRun(int exitCode, String output) {

    /** Runs the program with {@code options} plus the test database's URL and credentials. */
    public static ProgramRun of(String... options) {
        List<String> args = new ArrayList<>(List.of(options));
        TestDatabase database = TestDatabase.get();
        args.add("--jdbc-url=" + database.url());
        if (database.user() != null) {
            args.add("--db-user=" + database.user());
        }
        if (database.password() != null) {
            args.add("--db-password=" + database.password());
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exitCode = BenchmarkMain.run(args.toArray(String[]::new), new PrintStream(bytes, true, StandardCharsets.UTF_8),
                System.err);
        return new ProgramRun(exitCode, bytes.toString(StandardCharsets.UTF_8));
    }

    /** The printed lines that start with {@code prefix} (a section's title, or "|" plus it in markdown). */
    public List<String> rows(String prefix) {
        return output.lines().filter(line -> line.startsWith(prefix)).toList();
    }
}

package dev.idempotency.outbox.cli;

import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The relay's command line as a process of its own (this JVM's java and class path) on a test schema. */
final class RelayProcesses {
    private RelayProcesses() {
    }

    /** Starts {@code outbox-relay <args>} against {@code schema} on the test database; stderr joins stdout. */
    static Process start(TestSchema schema, String... args) throws IOException {
        TestDatabase database = TestDatabase.get();
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), OutboxRelayCli.class.getName()));
        command.addAll(List.of(args));
        command.addAll(List.of("--jdbc-url", database.url(), "--schema", schema.name()));
        if (database.user() != null) {
            command.addAll(List.of("--db-user", database.user()));
        }
        if (database.password() != null) {
            command.addAll(List.of("--db-password", database.password()));
        }
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }
}

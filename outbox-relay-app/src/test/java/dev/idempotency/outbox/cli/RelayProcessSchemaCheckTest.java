package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The runnable process on an outbox whose id sequence was changed to cache ids: it refuses, naming the fix. */
@Timeout(120)
class RelayProcessSchemaCheckTest {

    @Test
    void runOnAnOutboxWhoseIdSequenceCachesIdsExitsWithTheAlterStatementThatFixesIt() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("process_cache", 2)) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("ALTER TABLE outbox_events ALTER COLUMN id SET CACHE 20");

            Process process = start(schema, "run", "--http-port", "-1");
            CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> readAll(process));
            assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the process did not exit");
            String text = output.get(10, TimeUnit.SECONDS);

            assertEquals(2, process.exitValue(), text);
            assertTrue(text.contains("error: outbox relay not started: the id sequence ") && text.contains(
                    "fix: ALTER TABLE \"" + schema.name() + "\".outbox_events ALTER COLUMN id SET CACHE 1"), text);
            assertTrue(!text.contains("\tat "), "no stack trace:\n" + text);
        }
    }

    private static Process start(TestSchema schema, String... args) throws Exception {
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

    private static String readAll(Process process) {
        try {
            return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}

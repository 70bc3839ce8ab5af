package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The runnable process as an operator runs it: a separate JVM, stopped with SIGTERM. */
@Timeout(120)
class RelayProcessTest {
    private static final Pattern METRICS_URL = Pattern.compile("metrics at (http://\\S+)/metrics");

    @Test
    void theProcessMigratesPublishesServesMetricsAndHealthAndExitsZeroOnSigterm() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("process", 2)) {
            // An id with a quote and a backslash: /health must still be valid JSON that carries it as given.
            String instance = "relay \"one\" \\ 1";
            Process process = RelayProcesses.start(schema, "run", "--migrate", "--http-port", "0", "--idle-poll-max", "100ms",
                    "--instance-id", instance);
            try {
                String base = awaitMetricsUrl(process);
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                jdbi.useHandle(h -> h.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                        + "SELECT 't1', 'payments', 'p' || g, '{\"n\": 1}' FROM generate_series(1, 20) g"));
                awaitPublished(jdbi, 20);

                HttpClient http = HttpClient.newHttpClient();
                HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(base + "/health")).build(),
                        HttpResponse.BodyHandlers.ofString());
                HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, health.statusCode(), health.body());
                assertTrue(health.body().contains("\"status\":\"UP\""), health.body());
                assertEquals(instance, new ObjectMapper().readTree(health.body()).get("instance").asText(), health.body());
                assertTrue(metrics.body().contains("outbox_events_published_total 20.0"), metrics.body());
                assertTrue(metrics.body().contains("outbox_commit_to_publish_seconds_bucket"), metrics.body());
                assertTrue(metrics.body().contains("outbox_backlog_events"), metrics.body());

                process.destroy(); // SIGTERM
                assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the process did not stop after SIGTERM");
                assertEquals(0, process.exitValue());
                long owned = jdbi.withHandle(h -> h.createQuery(
                        "SELECT count(*) FROM outbox_relay_partitions WHERE owner_id IS NOT NULL").mapTo(Long.class).one());
                assertEquals(0, owned, "partitions handed back on shutdown");
            } finally {
                process.destroyForcibly();
            }
        }
    }

    @Test
    void aPublisherOnTheClassPathIsChosenByNameAndGetsItsSettings(@TempDir Path directory) throws Exception {
        Path sink = directory.resolve("sink.txt");
        try (TestSchema schema = TestDatabase.get().newSchema("process_custom", 2)) {
            // This JVM's class path, which the process gets, holds the test classes and their service file.
            Process process = RelayProcesses.start(schema, "run", "--migrate", "--http-port", "0", "--idle-poll-max", "100ms",
                    "--publisher", FileSinkPublisherProvider.NAME, "-s", "file=" + sink);
            try {
                awaitMetricsUrl(process);
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                jdbi.useHandle(h -> h.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                        + "SELECT 't1', 'payments', 'p' || g, '{}' FROM generate_series(1, 5) g"));
                awaitPublished(jdbi, 5);

                List<String> written = Files.readAllLines(sink).stream().sorted().toList();
                List<String> messageIds = jdbi.withHandle(h -> h.createQuery(
                        "SELECT message_id::text FROM outbox_events ORDER BY 1").mapTo(String.class).list());
                assertEquals(messageIds, written);
            } finally {
                process.destroyForcibly();
            }
        }
    }

    @Test
    void aBadFlagIsRefusedWithAMessageAndANonZeroExit() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("process_flags", 1)) {
            Process process = RelayProcesses.start(schema, "run", "--publisher", "carrier-pigeon", "--http-port", "-1");
            StringBuilder output = new StringBuilder();
            CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> readAll(process, output));
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            reader.get(10, TimeUnit.SECONDS);

            assertEquals(2, process.exitValue());
            assertTrue(output.toString().contains("error: unknown publisher 'carrier-pigeon'; publishers on the class path:"
                    + " http, kafka, log, nats, rabbitmq, " + FileSinkPublisherProvider.NAME + "\n"), output.toString());
            assertTrue(!output.toString().contains("\tat "), "no stack trace:\n" + output);
        }
    }

    @Test
    void runOnAnOutboxWhoseIdSequenceCachesIdsExitsWithTheAlterStatementThatFixesIt() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("process_cache", 2)) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("ALTER SEQUENCE outbox_events_id_seq CACHE 20");

            Process process = RelayProcesses.start(schema, "run", "--http-port", "-1");
            StringBuilder output = new StringBuilder();
            CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> readAll(process, output));
            assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the process did not exit");
            reader.get(10, TimeUnit.SECONDS);

            String text = output.toString();
            assertEquals(2, process.exitValue(), text);
            assertTrue(text.contains("error: outbox relay not started: the id sequence ") && text.contains(
                    "fix: ALTER SEQUENCE " + schema.name() + ".outbox_events_id_seq CACHE 1"), text);
            assertTrue(!text.contains("\tat "), "no stack trace:\n" + text);
        }
    }

    private static String awaitMetricsUrl(Process process) throws Exception {
        StringBuilder seen = new StringBuilder();
        CompletableFuture<String> url = CompletableFuture.supplyAsync(() -> {
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    seen.append(line).append('\n');
                    Matcher matcher = METRICS_URL.matcher(line);
                    if (matcher.find()) {
                        // Keep draining so the child never blocks on a full pipe.
                        CompletableFuture.runAsync(() -> drain(out));
                        return matcher.group(1);
                    }
                }
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            throw new IllegalStateException("the process exited before serving metrics:\n" + seen);
        });
        return url.get(60, TimeUnit.SECONDS);
    }

    private static void awaitPublished(Jdbi jdbi, long expected) {
        Await.until("the process publishing all " + expected + " events", Duration.ofSeconds(60), () -> jdbi.withHandle(h -> h.createQuery(
                "SELECT count(*) FROM outbox_event_states WHERE status = 'published'").mapTo(Long.class).one()) == expected);
    }

    private static void drain(BufferedReader out) {
        try {
            while (out.readLine() != null) {
                // discard
            }
        } catch (java.io.IOException e) {
            // the process ended
        }
    }

    private static void readAll(Process process, StringBuilder output) {
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                output.append(line).append('\n');
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}

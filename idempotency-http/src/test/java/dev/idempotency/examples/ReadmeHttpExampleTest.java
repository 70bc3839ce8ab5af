package dev.idempotency.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpServer;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.MigratedSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's adapter ({@link JdkServerAdapter}) over real HTTP, and the README showing its code. */
@Timeout(60)
class ReadmeHttpExampleTest {
    private static final Path README = Path.of(System.getProperty("user.dir")).getParent().resolve("docs/guide.md");
    private static final Path ADAPTER = Path.of(System.getProperty("user.dir"))
            .resolve("src/test/java/dev/idempotency/examples/JdkServerAdapter.java");

    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).poolSize(4)
            .afterMigration("CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                    + "tenant_id text NOT NULL, request_key text NOT NULL, amount bigint NOT NULL)").build();
    private static HttpServer server;
    private static final HttpClient client = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws IOException {
        server = JdkServerAdapter.start(PostgresIdempotentExecutor.builder(db.dataSource())
                .config(IdempotencyConfig.builder().schema(db.name()).build()).build());
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    private static HttpResponse<byte[]> post(String body, String... keyLines) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/payments"))
                .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString(body));
        for (String line : keyLines) {
            request.header("Idempotency-Key", line);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static long payments(String key) {
        return Jdbi.create(db.dataSource()).withHandle(h -> h.createQuery("SELECT count(*) FROM payments WHERE request_key = :k")
                .bind("k", key).mapTo(Long.class).one());
    }

    @Test
    void aRetriedPostGetsTheFirstResponseByteForByteMarkedReplayedAndPaysOnce() throws Exception {
        String key = UUID.randomUUID().toString();
        HttpResponse<byte[]> first = post("1000", "\"" + key + "\"");
        HttpResponse<byte[]> retry = post("1000", "\"" + key + "\"");
        assertEquals(201, first.statusCode());
        assertTrue(first.headers().firstValue("Set-Cookie").isPresent());
        assertEquals("false", first.headers().firstValue("Idempotent-Replayed").orElse(null));
        assertEquals(201, retry.statusCode());
        assertArrayEquals(first.body(), retry.body());
        assertEquals("true", retry.headers().firstValue("Idempotent-Replayed").orElse(null));
        assertEquals(first.headers().firstValue("Location"), retry.headers().firstValue("Location"));
        assertFalse(retry.headers().firstValue("Set-Cookie").isPresent(), "cookies are never replayed");
        assertEquals(1, payments(key));
    }

    @Test
    void missingMalformedAndReusedKeysAreProblems() throws Exception {
        HttpResponse<byte[]> missing = post("1");
        assertEquals(400, missing.statusCode());
        assertEquals("application/problem+json", missing.headers().firstValue("Content-Type").orElse(null));
        assertEquals("no-store", missing.headers().firstValue("Cache-Control").orElse(null));

        assertEquals(400, post("1", "two words").statusCode());
        assertEquals(400, post("1", "\"a\"", "\"a\"").statusCode(), "two field lines over the wire");

        String key = UUID.randomUUID().toString();
        assertEquals(201, post("5", "\"" + key + "\"").statusCode());
        HttpResponse<byte[]> reused = post("6", "\"" + key + "\"");
        assertEquals(422, reused.statusCode());
        assertTrue(new String(reused.body(), StandardCharsets.UTF_8).contains("idempotency-key-reused"));
        assertEquals(1, payments(key));
    }

    @Test
    void aDeclinedPaymentIsStoredAndReplayedAndAFailedOneIsRetried() throws Exception {
        String declinedKey = UUID.randomUUID().toString();
        HttpResponse<byte[]> declined = post("2000000", "\"" + declinedKey + "\"");
        assertEquals(402, declined.statusCode());
        HttpResponse<byte[]> again = post("2000000", "\"" + declinedKey + "\"");
        assertEquals(402, again.statusCode());
        assertEquals("true", again.headers().firstValue("Idempotent-Replayed").orElse(null));

        String failingKey = UUID.randomUUID().toString();
        assertEquals(500, post("13", "\"" + failingKey + "\"").statusCode());
        assertEquals(0, payments(failingKey), "the write before the exception rolled back");
        assertEquals(500, post("13", "\"" + failingKey + "\"").statusCode(), "no key was kept: the retry ran again");
    }

    @Test
    void aGetPassesThroughUntouched() throws Exception {
        HttpResponse<String> list = client.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/payments")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, list.statusCode());
        assertEquals("[]", list.body());
    }

    @Test
    void theReadmeShowsTheAdapterTheBuildRuns() throws IOException {
        String code = region(ADAPTER, "adapter");
        List<String> blocks = new ArrayList<>();
        Matcher matcher = Pattern.compile("(?m)^```[a-z]*\\n(.*?)^```", Pattern.DOTALL).matcher(Files.readString(README));
        while (matcher.find()) {
            blocks.add(matcher.group(1));
        }
        if (blocks.stream().noneMatch(block -> normalised(block).equals(normalised(code)))) {
            fail("docs/guide.md has no code block equal to the region tagged adapter (whitespace aside). Copy it from "
                    + ADAPTER + " into docs/guide.md, or change both:\n" + code);
        }
    }

    private static String region(Path file, String tag) throws IOException {
        StringBuilder region = new StringBuilder();
        boolean inside = false;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.contains("end::" + tag + "[]")) {
                inside = false;
                region.append('\n');
            } else if (line.contains("tag::" + tag + "[]")) {
                inside = true;
            } else if (inside) {
                region.append(line).append('\n');
            }
        }
        return region.toString();
    }

    private static String normalised(String code) {
        return code.replaceAll("\\s+", " ").trim();
    }
}

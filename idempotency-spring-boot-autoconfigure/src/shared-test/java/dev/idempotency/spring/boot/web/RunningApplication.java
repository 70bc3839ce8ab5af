package dev.idempotency.spring.boot.web;

import dev.idempotency.testing.MigratedSchema;
import dev.idempotency.testing.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A Spring Boot application started for real on a random port, on a test's own schema, and a client
 * that sends request targets exactly as written (java.net.http does not normalise the path). As a
 * static {@code @RegisterExtension} ({@link #shop}), a {@link ShopApplication} with a schema of its
 * own for the test class.
 */
final class RunningApplication implements BeforeAllCallback, AfterAllCallback, AutoCloseable {
    /** What every shop runs with: {@code POST /orders} keyed by path, no Flyway of the application's. */
    private static final List<String> SHOP = List.of("--idempotency.http.paths=/orders", "--spring.flyway.enabled=false");

    private final MigratedSchema db;
    private final List<String> arguments;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private ConfigurableApplicationContext context;
    private int port;

    private RunningApplication(MigratedSchema db, List<String> arguments) {
        this.db = db;
        this.arguments = arguments;
    }

    /**
     * For a static {@code @RegisterExtension}: before the class's tests, a schema of its own with the
     * {@code orders} table and {@link ShopApplication} started on it with these arguments.
     */
    static RunningApplication shop(String... arguments) {
        MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE)
                .afterMigration(ShopApplication.ORDERS_TABLE).build();
        List<String> all = new ArrayList<>(SHOP);
        all.addAll(List.of(arguments));
        return new RunningApplication(db, all);
    }

    /** Another {@link ShopApplication} on this one's schema, started now with these arguments; the caller closes it. */
    RunningApplication another(String... arguments) {
        List<String> all = new ArrayList<>(SHOP);
        all.addAll(List.of(arguments));
        RunningApplication other = new RunningApplication(db, all);
        other.start();
        return other;
    }

    @Override
    public void beforeAll(ExtensionContext extension) {
        db.beforeAll(extension);
        start();
    }

    @Override
    public void afterAll(ExtensionContext extension) {
        try {
            close();
        } finally {
            db.afterAll(extension);
        }
    }

    private void start() {
        TestDatabase database = TestDatabase.get();
        List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off",
                "--spring.datasource.url=" + database.url(),
                "--spring.datasource.hikari.schema=" + db.name(), "--spring.datasource.hikari.maximum-pool-size=6",
                "--idempotency.schema=" + db.name()));
        if (database.user() != null) {
            args.add("--spring.datasource.username=" + database.user());
        }
        if (database.password() != null) {
            args.add("--spring.datasource.password=" + database.password());
        }
        args.addAll(arguments);
        context = new SpringApplicationBuilder(ShopApplication.class).run(args.toArray(String[]::new));
        port = Integer.parseInt(context.getEnvironment().getProperty("local.server.port"));
    }

    /** The application's schema, which outlives the application until the class's tests end. */
    MigratedSchema schema() {
        return db;
    }

    ConfigurableApplicationContext context() {
        return context;
    }

    /** A POST of a JSON body to {@code target} (path and query, as sent), with one header line per key line. */
    HttpResponse<String> post(String target, String body, String... keyLines) throws Exception {
        HttpRequest.Builder request = request(target).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (String line : keyLines) {
            request.header("Idempotency-Key", line);
        }
        return send(request);
    }

    /** A request to {@code target} on this application, for a test to finish and {@link #send}. */
    HttpRequest.Builder request(String target) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + target)).timeout(Duration.ofSeconds(30));
    }

    HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * The status line of a POST whose key header carries {@code keyValue} as raw bytes on the wire
     * (e.g. UTF-8 or a control character, which java.net.http would not send as they are).
     */
    String postRawKey(String target, String body, byte[] keyValue) throws IOException {
        byte[] content = body.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + content.length + "\r\nIdempotency-Key: ")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(keyValue);
            out.write("\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(content);
            out.flush();
            String response = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            return response.substring(0, response.indexOf("\r\n"));
        }
    }

    int count(String sql, Object... args) {
        Integer count = context.getBean(JdbcTemplate.class).queryForObject(sql, Integer.class, args);
        return count == null ? 0 : count;
    }

    @Override
    public void close() {
        if (context != null) {
            context.close();
        }
    }
}

package dev.idempotency.outbox.cli;

import dev.idempotency.console.OutboxConsole;
import dev.idempotency.testing.MigratedSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The console served in-process over a test schema, as RunCommand serves it, and requests to it. */
final class ConsoleFixture {
    private ConsoleFixture() {
    }

    /** A status server on 127.0.0.1 and a free port with the console over {@code db}. */
    static StatusServer serve(MigratedSchema db, ConsoleAccess access, boolean readOnly) throws IOException {
        ConsoleHttpHandler console = new ConsoleHttpHandler(access, OutboxConsole.builder(db.dataSource()).schema(db.name())
                .readOnly(readOnly).basePath(ConsoleHttpHandler.BASE_PATH).stall(() -> Duration.ZERO, Duration.ofMinutes(5))
                .build());
        return new StatusServer("127.0.0.1", 0, () -> "",
                () -> StatusServer.Health.ofRelay(true, "test", 0, Duration.ZERO, Duration.ofMinutes(5)), console);
    }

    static HttpResponse<String> get(String url, String authorization) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url));
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> post(String url, String authorization, String form) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}

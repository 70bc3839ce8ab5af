package dev.idempotency.outbox.cli;

import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.testing.MigratedSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The console served in-process over a test schema, as RunCommand serves it, and dead letters written for it. */
final class ConsoleFixture {
    private ConsoleFixture() {
    }

    /** A status server on 127.0.0.1 and a free port with the console over {@code db}. */
    static StatusServer serve(MigratedSchema db, ConsoleAccess access, boolean readOnly) throws IOException {
        OutboxBacklog backlog = OutboxBacklog.builder(db.dataSource()).schema(db.name()).build();
        OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(db.dataSource()).schema(db.name()).build();
        ConsoleHandler console = new ConsoleHandler(access, readOnly, new ConsoleQueries(db.dataSource(), db.name()),
                backlog, deadLetters, () -> Duration.ZERO, Duration.ofMinutes(5));
        return new StatusServer("127.0.0.1", 0, () -> "",
                () -> StatusServer.Health.ofRelay(true, "test", 0, Duration.ZERO, Duration.ofMinutes(5)), console);
    }

    /** Writes dead letter {@code id} straight into outbox_retries, as the relay leaves one. */
    static void insertDeadLetter(MigratedSchema db, long id, String topic, String payloadJson) {
        db.execute("INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash,"
                + " payload, headers, created_at, status, attempts, last_error) VALUES (" + id + ", gen_random_uuid(), 't1', "
                + literal(topic) + ", 'k" + id + "', " + id + ", " + literal(payloadJson) + "::jsonb, '{\"h\": \"v\"}'::jsonb,"
                + " now() - interval '1 minute', 'dead', 3, 'HTTP 400: rejected <b>bold</b>')");
    }

    static String status(MigratedSchema db, long id) {
        return org.jdbi.v3.core.Jdbi.create(db.dataSource()).withHandle(h -> h.createQuery(
                "SELECT status FROM outbox_retries WHERE event_id = :id").bind("id", id).mapTo(String.class).one());
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

    private static String literal(String text) {
        return "'" + text.replace("'", "''") + "'";
    }
}

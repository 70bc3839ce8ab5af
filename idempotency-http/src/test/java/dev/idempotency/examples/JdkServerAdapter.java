package dev.idempotency.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.http.HttpHeader;
import dev.idempotency.http.HttpPaths;
import dev.idempotency.http.HttpRequestData;
import dev.idempotency.http.HttpResponseData;
import dev.idempotency.http.HttpResult;
import dev.idempotency.http.IdempotentHttp;
import dev.idempotency.http.IdempotentHttpConfig;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The README's adapter: the JDK's own HTTP server ({@code com.sun.net.httpserver}) in front of a
 * {@code POST /payments} handler, with the Idempotency-Key rules of {@link IdempotentHttp}. Only the
 * public API, from a package of its own, as a user's code would; {@code ReadmeHttpExampleTest}
 * calls it over real HTTP and checks that the README shows this code.
 */
final class JdkServerAdapter {
    private JdkServerAdapter() {
    }

    static HttpServer start(PostgresIdempotentExecutor executor) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        // tag::adapter[]
        IdempotentHttp<PostgresTransaction> http = IdempotentHttp.builder(executor)
                .config(IdempotentHttpConfig.builder().pathPrefixes("/payments").storedClientErrors(402).build())
                .build();

        server.createContext("/payments", exchange -> {
            try {
                // The path as the server routes it: decoded, without ';' parameters or dot segments.
                String path = HttpPaths.canonical(exchange.getRequestURI().getRawPath());
                HttpRequestData request = HttpRequestData.builder(exchange.getRequestMethod(), path)
                        .query(exchange.getRequestURI().getRawQuery())
                        .contentType(exchange.getRequestHeaders().getFirst("Content-Type"))
                        .keyFieldLines(exchange.getRequestHeaders().getOrDefault(http.config().headerName(), List.of()))
                        .body(exchange.getRequestBody().readAllBytes())
                        .build();
                String tenant = tenantOf(exchange); // the authenticated principal's, never a client header
                HttpResult result = http.handle(request, tenant, tx -> createPayment(tx, request));
                if (result.passedThrough()) {
                    listPayments(exchange); // GET and the others: no key, handled as usual
                } else {
                    send(exchange, result);
                }
            } catch (RuntimeException e) {
                // The handler threw: everything rolled back and no key was stored, so a retry runs again.
                exchange.sendResponseHeaders(500, -1);
            } finally {
                exchange.close();
            }
        });
        // end::adapter[]
        server.start();
        return server;
    }

    // tag::adapter[]
    static void send(HttpExchange exchange, HttpResult result) throws IOException {
        if (result.contentType() != null) {
            exchange.getResponseHeaders().add("Content-Type", result.contentType());
        }
        for (HttpHeader header : result.headers()) {   // Idempotent-Replayed, Retry-After, Cache-Control, ...
            exchange.getResponseHeaders().add(header.name(), header.value());
        }
        byte[] body = result.body();
        exchange.sendResponseHeaders(result.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
    // end::adapter[]

    /** The business write, in the key's transaction: one payment row; 201 with its id, or 402 for a declined amount. */
    static HttpResponseData createPayment(PostgresTransaction tx, HttpRequestData request) {
        long cents = Long.parseLong(new String(request.body(), StandardCharsets.UTF_8).trim());
        if (cents > 1_000_000) {
            return HttpResponseData.builder(402).contentType("application/json")
                    .body("{\"declined\":\"amount over limit\"}".getBytes(StandardCharsets.UTF_8)).build();
        }
        long id = tx.handle().createUpdate("INSERT INTO payments (tenant_id, request_key, amount) VALUES (:t, :k, :a)")
                .bind("t", tx.tenant()).bind("k", tx.key()).bind("a", cents)
                .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
        if (cents == 13) {
            throw new IllegalStateException("unlucky amount, after the write");
        }
        return HttpResponseData.builder(201).contentType("application/json")
                .header("Location", "/payments/" + id)
                .header("Set-Cookie", "seen=1")
                .body(("{\"id\":" + id + ",\"cents\":" + cents + ",\"at\":" + System.nanoTime() + "}").getBytes(StandardCharsets.UTF_8))
                .build();
    }

    private static String tenantOf(HttpExchange exchange) {
        return "demo-tenant";
    }

    private static void listPayments(HttpExchange exchange) throws IOException {
        byte[] body = "[]".getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}

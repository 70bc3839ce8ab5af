package dev.idempotency.benchmarks.sections;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.http.HttpHeader;
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
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * Section 10's application: the JDK's own HTTP server on 127.0.0.1 (a random port) answering
 * {@code POST /plain-payments} with the payment insert in a bare Jdbi transaction, and
 * {@code POST /payments} with the same insert through {@link IdempotentHttp} and the real
 * {@link PostgresIdempotentExecutor}; both 201 with the amount as JSON. One pool and one handler
 * thread per caller, so neither side queues behind the other.
 */
final class HttpPaymentServer implements AutoCloseable {
    static final String PLAIN_PATH = "/plain-payments";
    static final String KEYED_PATH = "/payments";

    private final HttpServer server;
    private final ExecutorService handlers;
    private final HikariDataSource pool;

    private HttpPaymentServer(HttpServer server, ExecutorService handlers, HikariDataSource pool) {
        this.server = server;
        this.handlers = handlers;
        this.pool = pool;
    }

    static HttpPaymentServer start(BenchmarkRun run, int callers) throws IOException {
        // Without TCP_NODELAY (off by default in the JDK server, read once when it first starts) each
        // response waits ~40 ms for the client's delayed ACK, and the rows would measure that instead.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        HikariDataSource pool = run.database().pool("http-" + callers, callers);
        ExecutorService handlers = Executors.newFixedThreadPool(callers);
        try {
            String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
            Jdbi jdbi = Jdbi.create(pool);
            IdempotentHttp<PostgresTransaction> http = IdempotentHttp.builder(
                            PostgresIdempotentExecutor.builder(pool).config(run.executorConfig()).build())
                    .config(IdempotentHttpConfig.builder().pathPrefixes(KEYED_PATH).build())
                    .build();
            HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.setExecutor(handlers);
            server.createContext(PLAIN_PATH, exchange -> serve(exchange, () -> {
                byte[] body = exchange.getRequestBody().readAllBytes();
                HttpResponseData response = jdbi.inTransaction(h -> createPayment(h, insertPayment, body));
                send(exchange, response.status(), response.contentType(), List.of(), response.body());
            }));
            server.createContext(KEYED_PATH, exchange -> serve(exchange, () -> {
                HttpRequestData request = HttpRequestData.builder(exchange.getRequestMethod(), exchange.getRequestURI().getPath())
                        .query(exchange.getRequestURI().getRawQuery())
                        .contentType(exchange.getRequestHeaders().getFirst("Content-Type"))
                        .keyFieldLines(exchange.getRequestHeaders().getOrDefault(http.config().headerName(), List.of()))
                        .body(exchange.getRequestBody().readAllBytes())
                        .build();
                HttpResult result = http.handle(request, PaymentCalls.TENANT,
                        tx -> createPayment(tx.handle(), insertPayment, request.body()));
                if (result.passedThrough()) {
                    send(exchange, 405, null, List.of(), new byte[0]);
                } else {
                    send(exchange, result.status(), result.contentType(), result.headers(), result.body());
                }
            }));
            server.start();
            return new HttpPaymentServer(server, handlers, pool);
        } catch (IOException | RuntimeException e) {
            handlers.shutdownNow();
            pool.close();
            throw e;
        }
    }

    URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** The business write of every section, one payment row; the amount is the request body. */
    private static HttpResponseData createPayment(Handle handle, String insertPayment, byte[] body) {
        long amount = Long.parseLong(new String(body, StandardCharsets.UTF_8).trim());
        handle.createUpdate(insertPayment).bind("tenant", PaymentCalls.TENANT).bind("amount", amount).execute();
        return HttpResponseData.builder(201).contentType("application/json")
                .body(("{\"amount\":" + amount + "}").getBytes(StandardCharsets.UTF_8)).build();
    }

    @FunctionalInterface
    private interface Exchange {
        void serve() throws IOException;
    }

    /** Runs one exchange; a failure is a 500 the client counts as an error. */
    private static void serve(HttpExchange exchange, Exchange body) throws IOException {
        try {
            body.serve();
        } catch (RuntimeException e) {
            exchange.sendResponseHeaders(500, -1);
        } finally {
            exchange.close();
        }
    }

    private static void send(HttpExchange exchange, int status, String contentType, List<HttpHeader> headers, byte[] body)
            throws IOException {
        if (contentType != null) {
            exchange.getResponseHeaders().add("Content-Type", contentType);
        }
        for (HttpHeader header : headers) {
            exchange.getResponseHeaders().add(header.name(), header.value());
        }
        exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /** Stops the server at once (the cell's callers have returned), its handler threads and the pool. */
    @Override
    public void close() {
        server.stop(0);
        handlers.shutdownNow();
        pool.close();
    }
}

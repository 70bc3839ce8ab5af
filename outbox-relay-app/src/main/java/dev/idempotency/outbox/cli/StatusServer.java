package dev.idempotency.outbox.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * Serves {@code /metrics} (Prometheus text) and {@code /health} (200 when healthy, else 503) over plain HTTP,
 * and the operator console under {@code /console} when it is given one.
 */
final class StatusServer implements AutoCloseable {
    /** A health verdict and the one-line JSON body that explains it. */
    record Health(boolean healthy, String json) {
        private static final ObjectMapper JSON = new ObjectMapper();

        /**
         * A relay's verdict: UP while its database answers and the outbox is not stalled (the same event the
         * oldest pending one for {@code stallAfter} or longer). Jackson writes the body, so any instance id is escaped.
         */
        static Health ofRelay(boolean databaseAnswers, String instanceId, int heldPartitions, Duration stalledFor,
                              Duration stallAfter) {
            boolean stalled = stalledFor.compareTo(stallAfter) >= 0;
            boolean healthy = databaseAnswers && !stalled;
            ObjectNode body = JSON.createObjectNode()
                    .put("status", healthy ? "UP" : "DOWN")
                    .put("instance", instanceId)
                    .put("database", databaseAnswers)
                    .put("partitions", heldPartitions)
                    .put("stalled", stalled)
                    .put("stalledSeconds", stalledFor.toSeconds());
            try {
                return new Health(healthy, JSON.writeValueAsString(body));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("could not write the health body", e);
            }
        }
    }

    private final HttpServer server;

    StatusServer(String host, int port, Supplier<String> metrics, Supplier<Health> health) throws IOException {
        this(host, port, metrics, health, null);
    }

    /** As above, with {@code console} (null for none) answering every path under {@code /console}. */
    StatusServer(String host, int port, Supplier<String> metrics, Supplier<Health> health, HttpHandler console)
            throws IOException {
        server = HttpServer.create(new InetSocketAddress(host, port), 16);
        if (console != null) {
            server.createContext("/console", console);
        }
        server.createContext("/metrics", exchange -> respond(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get()));
        server.createContext("/health", exchange -> {
            Health verdict = health.get();
            respond(exchange, verdict.healthy() ? 200 : 503, "application/json", verdict.json());
        });
        // Two threads: a console page waiting on the database never holds up a health check or a scrape.
        server.setExecutor(Executors.newFixedThreadPool(console == null ? 1 : 2, runnable -> {
            Thread thread = new Thread(runnable, "outbox-relay-status");
            thread.setDaemon(true);
            return thread;
        }));
        server.start();
    }

    /** The port actually bound (useful when 0 was asked for). */
    int port() {
        return server.getAddress().getPort();
    }

    private static void respond(HttpExchange exchange, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}

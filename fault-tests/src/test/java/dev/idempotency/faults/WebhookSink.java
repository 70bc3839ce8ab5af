package dev.idempotency.faults;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A webhook receiver standing in for a broker: records each POSTed event (its Idempotency-Key and
 * Outbox-* headers) in a {@link PublishedEvents} on arrival, then answers 200 after an optional
 * delay. It counts requests in flight per relay (the {@code X-Relay} header the relay was told to
 * send), so a test can kill a relay while it is in the middle of a batch.
 */
final class WebhookSink implements AutoCloseable {
    static final String RELAY_HEADER = "X-Relay";

    private final PublishedEvents published;
    private final HttpServer server;
    private final ExecutorService threads = Executors.newFixedThreadPool(8);
    private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
    private volatile long delayMillis;

    WebhookSink(PublishedEvents published) throws IOException {
        this.published = published;
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        server.createContext("/", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    /** The base URL relays post to. */
    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/hooks";
    }

    int port() {
        return server.getAddress().getPort();
    }

    WebhookSink delayMillis(long delayMillis) {
        this.delayMillis = delayMillis;
        return this;
    }

    int inFlight(String relay) {
        AtomicInteger n = inFlight.get(relay);
        return n == null ? 0 : n.get();
    }

    int received(String relay) {
        AtomicInteger n = received.get(relay);
        return n == null ? 0 : n.get();
    }

    private void handle(HttpExchange exchange) throws IOException {
        String relay = String.valueOf(exchange.getRequestHeaders().getFirst(RELAY_HEADER));
        AtomicInteger flying = inFlight.computeIfAbsent(relay, r -> new AtomicInteger());
        flying.incrementAndGet();
        try (InputStream body = exchange.getRequestBody()) {
            body.readAllBytes();
            var headers = exchange.getRequestHeaders();
            published.record(headers.getFirst("Idempotency-Key"), headers.getFirst("Outbox-Tenant"),
                    headers.getFirst("Outbox-Topic"), headers.getFirst("Outbox-Partition-Key"));
            received.computeIfAbsent(relay, r -> new AtomicInteger()).incrementAndGet();
            if (delayMillis > 0) {
                Thread.sleep(delayMillis);
            }
            exchange.sendResponseHeaders(200, -1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            exchange.sendResponseHeaders(503, -1);
        } finally {
            flying.decrementAndGet();
            exchange.close();
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}

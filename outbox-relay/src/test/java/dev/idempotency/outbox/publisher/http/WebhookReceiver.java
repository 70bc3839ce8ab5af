package dev.idempotency.outbox.publisher.http;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/** A real HTTP server on 127.0.0.1 that records each request and answers what the test chooses. */
final class WebhookReceiver implements AutoCloseable {

    /** One request as the server saw it; header lookups ignore case. */
    record Request(String method, URI uri, Headers headers, String body) {
        String header(String name) {
            return headers.getFirst(name);
        }
    }

    /** What to answer: a status and a body. */
    record Answer(int status, String body) {
    }

    /** Decides the answer to a request; it may block (tests bound it). */
    interface Responder {
        Answer answer(Request request) throws InterruptedException;
    }

    private final HttpServer server;
    private final ExecutorService threads = Executors.newFixedThreadPool(16);
    private final List<Request> received = new CopyOnWriteArrayList<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger mostInFlight = new AtomicInteger();
    private volatile Responder responder = request -> new Answer(200, "");

    WebhookReceiver() {
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.createContext("/", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    /** The answer for each later request. */
    void answer(Responder responder) {
        this.responder = responder;
    }

    /** An absolute URL on this server. */
    String url(String pathAndQuery) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + pathAndQuery;
    }

    List<Request> received() {
        return received;
    }

    /** The highest number of requests this server was handling at the same time. */
    int mostInFlight() {
        return mostInFlight.get();
    }

    Request receivedWithKey(String idempotencyKey) {
        return received.stream().filter(r -> idempotencyKey.equals(r.header("Idempotency-Key"))).findFirst()
                .orElseThrow(() -> new AssertionError("no request with Idempotency-Key " + idempotencyKey
                        + "; received " + received));
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            Answer answer;
            // Counted from arrival until just before answering: strictly inside the client's own in-flight time.
            mostInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            try {
                answer = answer(exchange);
            } finally {
                inFlight.decrementAndGet();
            }
            if (answer == null) {
                return;
            }
            byte[] bytes = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(answer.status(), bytes.length == 0 ? -1 : bytes.length);
            if (bytes.length > 0) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(bytes);
                }
            }
        }
    }

    private Answer answer(HttpExchange exchange) throws IOException {
        String body;
        try (InputStream in = exchange.getRequestBody()) {
            body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Headers headers = new Headers();
        headers.putAll(exchange.getRequestHeaders());
        Request request = new Request(exchange.getRequestMethod(), exchange.getRequestURI(), headers, body);
        received.add(request);
        try {
            return responder.answer(request);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }
}

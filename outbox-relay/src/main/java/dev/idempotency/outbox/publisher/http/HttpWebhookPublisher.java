package dev.idempotency.outbox.publisher.http;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes each event as an HTTP POST of its JSON payload to a webhook (see
 * {@link HttpWebhookPublisherConfig#urlFor(String)}), on the JDK's {@code java.net.http} client.
 *
 * <p>Every request carries {@value #IDEMPOTENCY_KEY}: the event's message id
 * ({@link OutboxEvent#messageId()}, unique across outboxes), on which the receiver deduplicates;
 * {@code Content-Type: application/json}; {@code Outbox-Tenant}, {@code Outbox-Topic}
 * and {@code Outbox-Partition-Key}, encoded with {@link OutboxHeaders#encodeAsciiValue(String)} so
 * that any value fits; the configured static headers; the writer's trace context {@code traceparent}
 * and {@code tracestate}, when the event has one ({@link OutboxEvent#traceHeaders()}, in place of a
 * header of the same name); and the event's own headers as they are,
 * except those that are not valid HTTP headers, have a value that is not printable ASCII, or would
 * replace one of the above (those are skipped and logged at WARN).
 *
 * <p>A batch is sent concurrently, at most {@link HttpWebhookPublisherConfig#maxConcurrentRequests()} at a
 * time, and the whole call is given {@link HttpWebhookPublisherConfig#connectTimeout()} plus
 * {@link HttpWebhookPublisherConfig#requestTimeout()} ({@link #maxCallDuration()}): a request still waiting for
 * a free slot or an answer by then is {@code RETRY}. A 2xx answer is {@code PUBLISHED}; a 4xx other
 * than 408 and 429 is {@code REJECTED} (the relay dead-letters it); a refused connection or a connect
 * timeout is {@code UNAVAILABLE} (the request never reached the endpoint); any other status or a
 * timeout is {@code RETRY}. Redirects are not followed (a 3xx is RETRY).
 *
 * <p>Java 17's {@link HttpClient} cannot be closed: after {@link #close()} this publisher refuses
 * new batches and the client's idle connections go when it is garbage collected.
 */
public final class HttpWebhookPublisher implements Publisher {
    /** The header carrying {@link OutboxEvent#messageId()}. */
    public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

    private static final Logger log = LoggerFactory.getLogger(HttpWebhookPublisher.class);
    private static final Set<String> SET_BY_PUBLISHER = Set.of(IDEMPOTENCY_KEY, "Content-Type",
                    OutboxHeaders.TENANT, OutboxHeaders.TOPIC, OutboxHeaders.PARTITION_KEY).stream()
            .map(name -> name.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
    // Hop-by-hop headers describe one connection, not the message; an event must not set them.
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection",
            "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect");
    private static final int ERROR_BODY_LIMIT = 512;

    private final HttpWebhookPublisherConfig config;
    private final HttpClient client;
    private final Semaphore requestSlots;
    private final Duration requestDeadline;
    private final Set<String> staticHeaderNames;
    private volatile boolean closed;

    /** A publisher for {@code config}; it connects lazily, on the first batch. */
    public HttpWebhookPublisher(HttpWebhookPublisherConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        boolean https = config.baseUrl().getScheme().equalsIgnoreCase("https");
        this.client = HttpClient.newBuilder()
                .connectTimeout(config.connectTimeout())
                .followRedirects(HttpClient.Redirect.NEVER)
                // HTTP/2 only where TLS negotiates it; plain http stays on 1.1, without h2c upgrade attempts.
                .version(https ? HttpClient.Version.HTTP_2 : HttpClient.Version.HTTP_1_1)
                .build();
        this.requestSlots = new Semaphore(config.maxConcurrentRequests());
        this.requestDeadline = config.connectTimeout().plus(config.requestTimeout());
        this.staticHeaderNames = config.headers().keySet().stream()
                .map(name -> name.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
    }

    /** {@code connectTimeout + requestTimeout}: every request of a call ends by then. */
    /** {@code webhook}: OpenTelemetry names no messaging system for HTTP endpoints. */
    @Override
    public String messagingSystem() {
        return "webhook";
    }

    @Override
    public Optional<Duration> maxCallDuration() {
        return Optional.of(requestDeadline);
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        long deadline = System.nanoTime() + requestDeadline.toNanos();
        List<CompletableFuture<PublishResult>> pending = new ArrayList<>(events.size());
        for (OutboxEvent event : events) {
            pending.add(closed ? CompletableFuture.completedFuture(PublishResult.unavailable("publisher is closed"))
                    : sendWhenSlotFree(event, deadline));
        }
        // Every future completes by the call's deadline (orTimeout), so join is bounded.
        return pending.stream().map(CompletableFuture::join).collect(Collectors.toList());
    }

    /** Refuses further batches; requests in flight finish or time out on their own. */
    /** The settings this publisher was built with. */
    public HttpWebhookPublisherConfig config() {
        return config;
    }

    @Override
    public void close() {
        closed = true;
    }

    static boolean isSetByPublisher(String headerName) {
        return SET_BY_PUBLISHER.contains(headerName.toLowerCase(Locale.ROOT));
    }

    /** The JDK accepts Latin-1 in header values but receivers disagree on how to read it: only ASCII is sent. */
    static boolean isPrintableAscii(String value) {
        return value.chars().allMatch(c -> (c >= 0x20 && c < 0x7F) || c == '\t');
    }

    private CompletableFuture<PublishResult> sendWhenSlotFree(OutboxEvent event, long deadline) {
        try {
            if (!requestSlots.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return CompletableFuture.completedFuture(PublishResult.retry(
                        "not sent: no request slot came free within " + requestDeadline));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.completedFuture(PublishResult.retry("not sent: interrupted"));
        }
        URI url = config.urlFor(event.topic());
        CompletableFuture<HttpResponse<String>> response;
        try {
            response = client.sendAsync(request(event, url), ResponseSnippet.handler(ERROR_BODY_LIMIT));
        } catch (RuntimeException e) {
            requestSlots.release();
            return CompletableFuture.completedFuture(PublishResult.retry("not sent to " + url + ": " + e));
        }
        return response.copy().orTimeout(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)
                .handle((answer, failure) -> {
                    requestSlots.release();
                    if (failure == null) {
                        return resultOf(answer, url);
                    }
                    response.cancel(true);
                    String error = describe(failure, url);
                    return neverReachedTheEndpoint(failure) ? PublishResult.unavailable(error) : PublishResult.retry(error);
                });
    }

    private HttpRequest request(OutboxEvent event, URI url) {
        HttpRequest.Builder request = HttpRequest.newBuilder(url)
                .timeout(config.requestTimeout())
                .POST(HttpRequest.BodyPublishers.ofString(event.payloadJson(), StandardCharsets.UTF_8));
        event.headers().forEach((name, value) -> addEventHeader(request, event, name, value));
        config.headers().forEach(request::header);
        // The writer's trace context, as stored (W3C values are printable ASCII): replaces any header of the same name.
        event.traceHeaders().forEach(request::setHeader);
        return request
                .header(IDEMPOTENCY_KEY, event.messageId())
                .header("Content-Type", "application/json")
                .header(OutboxHeaders.TENANT, OutboxHeaders.encodeAsciiValue(event.tenant()))
                .header(OutboxHeaders.TOPIC, OutboxHeaders.encodeAsciiValue(event.topic()))
                .header(OutboxHeaders.PARTITION_KEY, OutboxHeaders.encodeAsciiValue(event.partitionKey()))
                .build();
    }

    private void addEventHeader(HttpRequest.Builder request, OutboxEvent event, String name, String value) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (SET_BY_PUBLISHER.contains(lower) || staticHeaderNames.contains(lower) || HOP_BY_HOP.contains(lower)) {
            log.warn("outbox event {}: header '{}' not sent: the publisher or the connection sets it", event.id(), name);
            return;
        }
        if (!isPrintableAscii(value)) {
            log.warn("outbox event {}: header '{}' not sent: its value is not printable ASCII", event.id(), name);
            return;
        }
        try {
            request.header(name, value);
        } catch (IllegalArgumentException e) {
            // The JDK's message may quote the value, which is the event's data: not logged.
            log.warn("outbox event {}: header '{}' not sent: not a valid HTTP header name or value", event.id(), name);
        }
    }

    private static PublishResult resultOf(HttpResponse<String> response, URI url) {
        int status = response.statusCode();
        if (status / 100 == 2) {
            return PublishResult.published();
        }
        String error = "HTTP " + status + " from " + url + (response.body().isEmpty() ? "" : ": " + response.body());
        if (status / 100 == 4 && status != 408 && status != 429) {
            return PublishResult.rejected(error);
        }
        return PublishResult.retry(error);
    }

    /** A refused connection or a connect timeout: the endpoint is down, not this event. */
    private static boolean neverReachedTheEndpoint(Throwable failure) {
        Throwable cause = unwrap(failure);
        return cause instanceof HttpConnectTimeoutException || cause instanceof ConnectException;
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    private String describe(Throwable failure, URI url) {
        Throwable cause = unwrap(failure);
        if (cause instanceof HttpConnectTimeoutException) {
            return "could not connect to " + url + " within " + config.connectTimeout();
        }
        if (cause instanceof HttpTimeoutException) {
            return "no response from " + url + " within " + config.requestTimeout();
        }
        if (cause instanceof TimeoutException) {
            return "no complete response from " + url + " within " + requestDeadline;
        }
        if (cause instanceof ConnectException) {
            return "could not connect to " + url + ": " + (cause.getMessage() == null ? "connection refused" : cause.getMessage());
        }
        return "request to " + url + " failed: " + cause;
    }
}

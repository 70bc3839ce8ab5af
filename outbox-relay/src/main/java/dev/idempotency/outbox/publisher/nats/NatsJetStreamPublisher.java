package dev.idempotency.outbox.publisher.nats;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStream;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes events to NATS JetStream, one result per event from the stream's own ack: an ack is
 * PUBLISHED, including a duplicate ack (the stream already holds that event); a failed or missing
 * ack (no stream on the subject, a timeout after {@link NatsJetStreamPublisherConfig#ackTimeout()}) is RETRY;
 * a subject or message the client refuses outright (say, a topic with a space, or a payload over the
 * server's limit) is REJECTED; the server unreachable, or the connection lost under the batch, is
 * UNAVAILABLE.
 *
 * <p>Each message goes to {@link NatsJetStreamPublisherConfig#subjectFor(String)} with the JSON payload and
 * headers {@value #MESSAGE_ID_HEADER} = the event's message id ({@link OutboxEvent#messageId()},
 * unique across outboxes), so the stream drops a re-publish within its duplicate window; {@code Outbox-Tenant},
 * {@code Outbox-Topic}, {@code Outbox-Partition-Key},
 * encoded with {@link OutboxHeaders#encodeAsciiValue(String)}; and the event's own headers, except
 * those NATS refuses (non-ASCII values) and those starting with {@code Nats-}, which would steer
 * JetStream (both skipped and logged at WARN).
 *
 * <p>A batch is published asynchronously and its acks awaited together. The publisher connects on
 * first use; the client then reconnects on its own, and while it is not connected every event is
 * UNAVAILABLE at once.
 */
public final class NatsJetStreamPublisher implements Publisher {
    /** The JetStream deduplication header. */
    public static final String MESSAGE_ID_HEADER = "Nats-Msg-Id";

    private static final Logger log = LoggerFactory.getLogger(NatsJetStreamPublisher.class);

    private final NatsJetStreamPublisherConfig config;
    private final Options options;
    private Connection connection;
    private JetStream jetStream;
    private volatile boolean closed;

    /** A publisher for {@code config}; it connects lazily, on the first batch. */
    public NatsJetStreamPublisher(NatsJetStreamPublisherConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.options = options(config);
    }

    /** One connect timeout per server (the first connect tries each) plus the ack timeout. */
    @Override
    public Optional<Duration> maxCallDuration() {
        return Optional.of(config.connectTimeout().multipliedBy(config.servers().size()).plus(config.ackTimeout()));
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        if (events.isEmpty()) {
            return List.of();
        }
        JetStream stream;
        try {
            stream = connected();
        } catch (IOException | RuntimeException e) {
            return all(events, PublishResult.unavailable("could not connect to NATS at " + config.servers() + ": "
                    + e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return all(events, PublishResult.unavailable("interrupted while connecting to NATS"));
        }
        long deadline = System.nanoTime() + config.ackTimeout().toNanos();
        List<CompletableFuture<PublishAck>> acks = new ArrayList<>(events.size());
        for (OutboxEvent event : events) {
            acks.add(send(stream, event));
        }
        awaitAcks(acks, deadline);
        PublishResult missing = PublishResult.retry("no JetStream ack within " + config.ackTimeout());
        List<PublishResult> outcome = new ArrayList<>(events.size());
        for (CompletableFuture<PublishAck> ack : acks) {
            outcome.add(outcome(ack, missing));
        }
        return outcome;
    }

    /** What one send's future says now: its ack, its failure, or {@code missing} (the future is then cancelled). */
    private static PublishResult outcome(CompletableFuture<PublishAck> ack, PublishResult missing) {
        if (!ack.isDone()) {
            ack.cancel(true);
            // Cancelling loses to an ack that came in between: that ack counts.
            if (ack.isCancelled()) {
                return missing;
            }
        }
        try {
            ack.join();
            return PublishResult.published();
        } catch (CompletionException | CancellationException e) {
            return failed(e);
        }
    }

    /** The settings this publisher was built with. */
    public NatsJetStreamPublisherConfig config() {
        return config;
    }

    /** Closes the connection; a batch in flight ends with RETRY results. */
    @Override
    public void close() {
        closed = true;
        Connection current;
        synchronized (this) {
            current = connection;
            connection = null;
        }
        if (current != null) {
            try {
                current.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private CompletableFuture<PublishAck> send(JetStream stream, OutboxEvent event) {
        try {
            return stream.publishAsync(NatsMessage.builder()
                    .subject(config.subjectFor(event.topic()))
                    .headers(headers(event))
                    .data(event.payloadJson().getBytes(StandardCharsets.UTF_8))
                    .build());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static PublishResult failed(Throwable failure) {
        Throwable cause = failure;
        // Unwrap the future's wrappers and the client's bare RuntimeException around an IOException.
        while ((cause instanceof CompletionException || cause instanceof ExecutionException
                || cause.getClass() == RuntimeException.class) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        String error = cause.getClass().getSimpleName() + ": " + cause.getMessage();
        // The client throws IllegalArgumentException before sending: a bad subject or an oversized
        // message, which no retry fixes. Its IllegalStateExceptions (closed, reconnecting) are about
        // the connection, not the event; an IOException may be about the subject (no stream: 503).
        if (cause instanceof IllegalArgumentException) {
            return PublishResult.rejected(error);
        }
        return cause instanceof IllegalStateException ? PublishResult.unavailable(error) : PublishResult.retry(error);
    }

    private static void awaitAcks(List<CompletableFuture<PublishAck>> acks, long deadline) {
        try {
            CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new))
                    .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            log.warn("NATS JetStream did not ack every message of a batch in time");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            // Some sends failed: each one's own future says how, below.
        }
    }

    /** {@code nats}. */
    @Override
    public String messagingSystem() {
        return "nats";
    }

    private Headers headers(OutboxEvent event) {
        Headers headers = new Headers();
        event.headers().forEach((name, value) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (lower.startsWith("nats-") || lower.equals(OutboxHeaders.TENANT.toLowerCase(Locale.ROOT))
                    || lower.equals(OutboxHeaders.TOPIC.toLowerCase(Locale.ROOT))
                    || lower.equals(OutboxHeaders.PARTITION_KEY.toLowerCase(Locale.ROOT))) {
                log.warn("outbox event {}: header '{}' not sent: reserved by NATS or the publisher", event.id(), name);
                return;
            }
            try {
                headers.add(name, value);
            } catch (IllegalArgumentException e) {
                // The client's message may quote the value, which is the event's data: not logged.
                log.warn("outbox event {}: header '{}' not sent: NATS refused its name or value", event.id(), name);
            }
        });
        // The writer's trace context, as stored (W3C values are printable ASCII): replaces an event header of the same name.
        event.traceHeaders().forEach(headers::put);
        return headers
                .put(MESSAGE_ID_HEADER, event.messageId())
                .put(OutboxHeaders.TENANT, OutboxHeaders.encodeAsciiValue(event.tenant()))
                .put(OutboxHeaders.TOPIC, OutboxHeaders.encodeAsciiValue(event.topic()))
                .put(OutboxHeaders.PARTITION_KEY, OutboxHeaders.encodeAsciiValue(event.partitionKey()));
    }

    private synchronized JetStream connected() throws IOException, InterruptedException {
        if (closed) {
            throw new IllegalStateException("publisher is closed");
        }
        if (connection != null && connection.getStatus() == Connection.Status.CLOSED) {
            connection = null;
        }
        if (connection == null) {
            Connection opened = Nats.connect(options);
            connection = opened;
            jetStream = opened.jetStream(JetStreamOptions.builder().requestTimeout(config.ackTimeout()).build());
        }
        Connection.Status status = connection.getStatus();
        if (status != Connection.Status.CONNECTED) {
            throw new IllegalStateException("the connection is " + status);
        }
        return jetStream;
    }

    private static List<PublishResult> all(List<OutboxEvent> events, PublishResult result) {
        return events.stream().map(event -> result).collect(Collectors.toList());
    }

    private static Options options(NatsJetStreamPublisherConfig config) {
        Options.Builder builder = new Options.Builder()
                .servers(config.servers().toArray(String[]::new))
                .connectionName(config.connectionName())
                .connectionTimeout(config.connectTimeout())
                // Keep reconnecting for as long as the relay runs; batches meanwhile are RETRY.
                .maxReconnects(-1)
                .errorListener(new ErrorListener() {
                    @Override
                    public void errorOccurred(Connection connection, String error) {
                        log.warn("NATS server error: {}", error);
                    }

                    @Override
                    public void exceptionOccurred(Connection connection, Exception exception) {
                        log.warn("NATS connection problem: {}", exception.toString());
                    }
                })
                .connectionListener((connection, event) -> log.info("NATS connection event {}", event.name()));
        if (config.username() != null) {
            builder.userInfo(config.username(), config.password());
        } else if (config.token() != null) {
            builder.token(config.token().toCharArray());
        } else if (config.credentialsFile() != null) {
            builder.authHandler(Nats.credentials(config.credentialsFile().toString()));
        }
        return builder.build();
    }
}

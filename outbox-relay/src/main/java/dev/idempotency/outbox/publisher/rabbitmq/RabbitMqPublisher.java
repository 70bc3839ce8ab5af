package dev.idempotency.outbox.publisher.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.SocketConfigurators;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes events to RabbitMQ with publisher confirms, one result per event from the broker's own
 * answer: an ack is PUBLISHED; a nack, a mandatory message no queue received, a missing confirm
 * after {@link RabbitMqPublisherConfig#confirmTimeout()} or a channel the broker closed is RETRY; a topic too
 * long for a routing key is REJECTED. When the broker cannot be reached, has blocked the connection,
 * or the connection fails under the batch, the events not confirmed are UNAVAILABLE.
 *
 * <p>Each message is persistent (delivery mode 2), has content type {@code application/json},
 * AMQP {@code message-id} = the event's message id ({@link OutboxEvent#messageId()}, unique across
 * outboxes), and headers {@code Outbox-Tenant}, {@code Outbox-Topic},
 * {@code Outbox-Partition-Key} (as UTF-8 strings), the writer's trace context {@code traceparent} and
 * {@code tracestate} when the event has one ({@link OutboxEvent#traceHeaders()}), plus the event's own headers (those that would
 * replace the former, or whose names exceed 255 bytes, are skipped and logged at WARN). It goes to
 * {@link RabbitMqPublisherConfig#exchange()} with the topic as routing key.
 *
 * <p>A batch is written in full, then its confirms are awaited together. Batches take turns on one
 * channel. The publisher connects on first use and again on the first batch after the connection
 * was lost; while the broker is unreachable, or has blocked the connection for lack of resources,
 * every event is UNAVAILABLE at once. Connecting (TCP, handshake, channel) is cut off after
 * {@link RabbitMqPublisherConfig#connectTimeout()} and a batch whose writes stall (a broker that stopped
 * reading) has its socket closed after the confirm timeout, so {@link #publish(List)} returns within
 * {@link #maxCallDuration()}.
 */
public final class RabbitMqPublisher implements Publisher {
    private static final Logger log = LoggerFactory.getLogger(RabbitMqPublisher.class);

    private final RabbitMqPublisherConfig config;
    private final ConnectionFactory factory;
    private final ScheduledThreadPoolExecutor watchdog;
    private volatile Connection connection;
    private volatile Socket socket;
    private volatile String blockedReason;
    private volatile boolean writing;
    private volatile boolean connecting;
    private volatile boolean closed;
    private Channel channel;
    private PendingConfirms pending;

    /** A publisher for {@code config}; it connects lazily, on the first batch. */
    public RabbitMqPublisher(RabbitMqPublisherConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.factory = connectionFactory(config);
        this.watchdog = new ScheduledThreadPoolExecutor(1, task -> {
            Thread thread = new Thread(task, "rabbitmq-publisher-watchdog");
            thread.setDaemon(true);
            return thread;
        });
        this.watchdog.setRemoveOnCancelPolicy(true);
    }

    /** {@code connectTimeout + confirmTimeout}: connecting is cut off after the first, writing and confirms after the second. */
    @Override
    public Optional<Duration> maxCallDuration() {
        return Optional.of(config.connectTimeout().plus(config.confirmTimeout()));
    }

    @Override
    public synchronized List<PublishResult> publish(List<OutboxEvent> events) {
        if (events.isEmpty()) {
            return List.of();
        }
        if (closed) {
            return all(events, PublishResult.unavailable("publisher is closed"));
        }
        String blocked = blockedReason;
        Connection current = connection;
        if (blocked != null && current != null && current.isOpen()) {
            return all(events, PublishResult.unavailable("RabbitMQ has blocked the connection: " + blocked));
        }
        Channel open;
        try {
            open = openChannelWithin(config.connectTimeout());
        } catch (IOException | TimeoutException | RuntimeException e) {
            dropConnection();
            return all(events, PublishResult.unavailable("could not connect to RabbitMQ at " + config.host() + ":"
                    + config.port() + ": " + describe(e)));
        }
        PendingConfirms confirms = pending;
        long deadline = System.nanoTime() + config.confirmTimeout().toNanos();
        ScheduledFuture<?> stalledWrite;
        try {
            stalledWrite = watchdog.schedule(this::cutStalledWrite, config.confirmTimeout().toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            return all(events, PublishResult.unavailable("publisher is closed"));
        }
        try {
            confirms.begin(events.size());
            PublishResult[] unsent = write(open, confirms, events);
            if (!confirms.await(deadline) && !Thread.currentThread().isInterrupted()) {
                log.warn("RabbitMQ did not confirm every message of a batch within {}", config.confirmTimeout());
            }
            // On a connection that died under the batch, its shutdown listener may still be answering some of
            // these as UNAVAILABLE on the client's thread: answer the same, or an outage would count attempts.
            PublishResult missing = open.getConnection().isOpen()
                    ? PublishResult.retry("no publisher confirm within " + config.confirmTimeout())
                    : PublishResult.unavailable("not confirmed: the connection to RabbitMQ closed");
            PublishResult[] answered = confirms.finish(missing);
            for (int i = 0; i < answered.length; i++) {
                if (unsent[i] != null) {
                    answered[i] = unsent[i];
                }
            }
            return List.of(answered);
        } finally {
            stalledWrite.cancel(false);
            confirms.finish(null);
        }
    }

    /** The settings this publisher was built with. */
    public RabbitMqPublisherConfig config() {
        return config;
    }

    /** Closes the connection; the events of a batch in flight that were not confirmed end UNAVAILABLE. */
    @Override
    public void close() {
        closed = true;
        watchdog.shutdownNow();
        if (writing) {
            // A graceful close would queue behind the stalled write; cutting the socket ends both.
            cutStalledWrite();
        }
        dropConnection();
    }

    /**
     * Publishes the batch on {@code open}, each message registered with {@code confirms} before it is
     * written; returns the answers of the events not published (refused, or not sent after a failed
     * write), null for each published one, whose answer comes from the broker.
     */
    private PublishResult[] write(Channel open, PendingConfirms confirms, List<OutboxEvent> events) {
        PublishResult[] unsent = new PublishResult[events.size()];
        String failure = null;
        boolean connectionFailed = false;
        writing = true;
        try {
            for (int i = 0; i < events.size(); i++) {
                OutboxEvent event = events.get(i);
                if (failure != null) {
                    String notSent = "not sent: " + failure;
                    unsent[i] = connectionFailed ? PublishResult.unavailable(notSent) : PublishResult.retry(notSent);
                    continue;
                }
                if (!fitsARoutingKey(event.topic())) {
                    unsent[i] = PublishResult.rejected("topic is longer than the "
                            + RabbitMqPublisherConfig.MAX_SHORT_STRING_BYTES + " bytes an AMQP routing key can hold");
                    continue;
                }
                if (!confirms.expect(open.getNextPublishSeqNo(), i, event.messageId())) {
                    // Never expected: batches alone publish on the channel. Its confirms could not be matched.
                    failure = "the channel's publish sequence numbers are out of step with the batch";
                    unsent[i] = PublishResult.retry("not sent: " + failure);
                    confirms.failAll(PublishResult.retry("not confirmed: " + failure));
                    closeChannel();
                    continue;
                }
                try {
                    open.basicPublish(config.exchange(), event.topic(), config.mandatory(), properties(event),
                            event.payloadJson().getBytes(StandardCharsets.UTF_8));
                } catch (IOException | RuntimeException e) {
                    // After a failed write the channel's sequence numbers may no longer match the broker's.
                    failure = describe(e);
                    // A socket that failed (or that the watchdog cut) leaves the connection useless.
                    connectionFailed = e instanceof IOException || !open.getConnection().isOpen();
                    String notConfirmed = "not confirmed: " + failure;
                    confirms.failAll(connectionFailed ? PublishResult.unavailable(notConfirmed)
                            : PublishResult.retry(notConfirmed));
                    closeChannel();
                    if (connectionFailed) {
                        dropConnection();
                    }
                }
            }
        } finally {
            writing = false;
        }
        return unsent;
    }

    /** Whether {@code topic} fits the 255 bytes of a routing key; encoded only when it could be longer. */
    private static boolean fitsARoutingKey(String topic) {
        // A UTF-16 char is at most 3 UTF-8 bytes (a surrogate pair, 2 chars, is 4).
        return topic.length() * 3 <= RabbitMqPublisherConfig.MAX_SHORT_STRING_BYTES
                || topic.getBytes(StandardCharsets.UTF_8).length <= RabbitMqPublisherConfig.MAX_SHORT_STRING_BYTES;
    }

    /** {@code rabbitmq}. */
    @Override
    public String messagingSystem() {
        return "rabbitmq";
    }

    private AMQP.BasicProperties properties(OutboxEvent event) {
        Map<String, Object> headers = new HashMap<>();
        event.headers().forEach((name, value) -> {
            if (isOutboxHeader(name) || name.getBytes(StandardCharsets.UTF_8).length > RabbitMqPublisherConfig.MAX_SHORT_STRING_BYTES) {
                log.warn("outbox event {}: header '{}' not sent: reserved by the publisher or too long", event.id(), name);
            } else {
                headers.put(name, value);
            }
        });
        headers.put(OutboxHeaders.TENANT, event.tenant());
        headers.put(OutboxHeaders.TOPIC, event.topic());
        headers.put(OutboxHeaders.PARTITION_KEY, event.partitionKey());
        // The writer's trace context, as stored: replaces an event header of the same name.
        headers.putAll(event.traceHeaders());
        return new AMQP.BasicProperties.Builder()
                .messageId(event.messageId())
                .contentType("application/json")
                .contentEncoding("utf-8")
                .deliveryMode(2)
                .headers(headers)
                .build();
    }

    private static boolean isOutboxHeader(String name) {
        return name.equalsIgnoreCase(OutboxHeaders.TENANT) || name.equalsIgnoreCase(OutboxHeaders.TOPIC)
                || name.equalsIgnoreCase(OutboxHeaders.PARTITION_KEY);
    }

    /** Opens the channel (and connection) or fails once {@code limit} has passed: the socket is cut then. */
    private Channel openChannelWithin(Duration limit) throws IOException, TimeoutException {
        if (channel != null && channel.isOpen()) {
            return channel;
        }
        ScheduledFuture<?> slowConnect;
        try {
            slowConnect = watchdog.schedule(this::cutSlowConnect, limit.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            throw new IllegalStateException("publisher is closed");
        }
        connecting = true;
        try {
            return openChannel();
        } finally {
            connecting = false;
            slowConnect.cancel(false);
        }
    }

    private Channel openChannel() throws IOException, TimeoutException {
        if (channel != null && channel.isOpen()) {
            return channel;
        }
        Connection current = connection;
        if (current == null || !current.isOpen()) {
            dropConnection();
            current = factory.newConnection(config.connectionName());
            blockedReason = null;
            current.addBlockedListener(reason -> {
                blockedReason = reason;
                log.warn("RabbitMQ blocked the connection: {}", reason);
            }, () -> {
                blockedReason = null;
                log.info("RabbitMQ unblocked the connection");
            });
            connection = current;
            if (closed) {
                dropConnection();
                throw new IllegalStateException("publisher is closed");
            }
            log.info("connected to RabbitMQ at {}:{}", config.host(), config.port());
        }
        // Each channel answers only for its own messages: a late callback of an old channel touches nothing new.
        PendingConfirms confirms = new PendingConfirms();
        Channel opened = current.createChannel();
        opened.confirmSelect();
        opened.addConfirmListener(confirms::acked, confirms::nacked);
        opened.addReturnListener(returned -> confirms.returned(returned.getProperties().getMessageId(),
                unroutable(returned)));
        opened.addShutdownListener(cause -> {
            String error = "channel closed before the confirm: " + describe(cause);
            // A hard error closed the whole connection (it died or the broker closed it): broker-level.
            confirms.failAll(cause.isHardError() ? PublishResult.unavailable(error) : PublishResult.retry(error));
        });
        channel = opened;
        pending = confirms;
        return opened;
    }

    private static String unroutable(Return returned) {
        return "unroutable: no queue received it (" + returned.getReplyCode() + " " + returned.getReplyText()
                + ", exchange '" + returned.getExchange() + "', routing key '" + returned.getRoutingKey() + "')";
    }

    /** Runs on the watchdog when a batch is still writing at its deadline: the broker stopped reading. */
    private void cutStalledWrite() {
        Socket stalled = socket;
        if (writing && stalled != null) {
            log.warn("writing a batch to RabbitMQ took longer than {}; closing the socket", config.confirmTimeout());
            try {
                stalled.close();
            } catch (IOException e) {
                log.debug("closing a stalled RabbitMQ socket failed", e);
            }
        }
    }

    /** Runs on the watchdog when connecting outlasts the connect timeout. */
    private void cutSlowConnect() {
        Socket slow = socket;
        if (connecting && slow != null) {
            log.warn("connecting to RabbitMQ took longer than {}; closing the socket", config.connectTimeout());
            try {
                slow.close();
            } catch (IOException e) {
                log.debug("closing a slow RabbitMQ socket failed", e);
            }
        }
    }

    private synchronized void closeChannel() {
        Channel current = channel;
        channel = null;
        if (current != null && current.isOpen()) {
            try {
                current.abort();
            } catch (IOException | RuntimeException e) {
                log.debug("aborting a RabbitMQ channel failed", e);
            }
        }
    }

    private void dropConnection() {
        Connection current = connection;
        connection = null;
        if (current != null) {
            current.abort((int) Math.min(Integer.MAX_VALUE, config.connectTimeout().toMillis()));
        }
    }

    private static List<PublishResult> all(List<OutboxEvent> events, PublishResult result) {
        return events.stream().map(event -> result).collect(Collectors.toList());
    }

    private static String describe(Throwable failure) {
        Throwable cause = failure;
        // The client wraps the broker's reason (a ShutdownSignalException) in exceptions without a message.
        while (cause.getCause() != null && (cause.getMessage() == null || cause.getCause() instanceof ShutdownSignalException)) {
            cause = cause.getCause();
        }
        return cause.getMessage() == null ? cause.getClass().getSimpleName()
                : cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }

    private ConnectionFactory connectionFactory(RabbitMqPublisherConfig config) {
        ConnectionFactory created = new ConnectionFactory();
        created.setHost(config.host());
        created.setPort(config.port());
        created.setVirtualHost(config.virtualHost());
        created.setUsername(config.username());
        created.setPassword(config.password());
        int connectMillis = (int) config.connectTimeout().toMillis();
        created.setConnectionTimeout(connectMillis);
        created.setHandshakeTimeout(connectMillis);
        created.setChannelRpcTimeout(connectMillis);
        // Recovery would renumber confirms behind our back; a lost connection is reopened by the next batch.
        created.setAutomaticRecoveryEnabled(false);
        created.setTopologyRecoveryEnabled(false);
        created.setSocketConfigurator(SocketConfigurators.defaultConfigurator().andThen(opened -> socket = opened));
        if (config.tls()) {
            try {
                created.useSslProtocol(SSLContext.getDefault());
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JVM has no default TLS context", e);
            }
            created.enableHostnameVerification();
        }
        return created;
    }
}

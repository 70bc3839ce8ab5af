package dev.idempotency.benchmarks.sections;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Section 14's RabbitMQ: a direct exchange and a durable classic queue of the cell's own, bound by the
 * topic; the library's publisher sends to the exchange with the topic as routing key, mandatory, as
 * does the client alone, which pipelines publisher confirms: up to {@link #CONFIRM_WINDOW} messages
 * unconfirmed at a time, each confirm (or a multiple one) opening the window again.
 */
final class RabbitMqPath implements BrokerPath {
    /** Messages the raw publisher keeps unconfirmed at most: enough to keep the channel full on loopback. */
    static final int CONFIRM_WINDOW = 10_000;
    /** Longest the raw publish may wait for the window or for its last confirm, generous for any machine. */
    private static final Duration CONFIRM_WAIT = Duration.ofMinutes(5);

    private final URI url;
    private final ConnectionFactory factory;

    RabbitMqPath(String rabbitMqUrl) throws Exception {
        this.url = URI.create(rabbitMqUrl);
        this.factory = new ConnectionFactory();
        factory.setUri(url);
    }

    @Override
    public String name() {
        return "RabbitMQ";
    }

    @Override
    public String rawWay() {
        return "amqp-client publisher confirms, " + CONFIRM_WINDOW + " unconfirmed at most";
    }

    @Override
    public Destination open() throws Exception {
        String name = "relaybench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        Connection admin;
        try {
            admin = factory.newConnection("relaybench-admin");
        } catch (IOException e) {
            throw new IllegalStateException("RabbitMQ at " + url.getHost() + ":" + url.getPort() + " does not answer ("
                    + e.getMessage() + "); start rabbitmq-server, or leave rabbitmq out of --brokers", e);
        }
        Channel channel = admin.createChannel();
        channel.exchangeDeclare(name, "direct", false, false, null);
        channel.queueDeclare(name, true, false, false, null);
        channel.queueBind(name, name, RelayBenchSql.FILL_TOPIC);
        return new Destination() {
            @Override
            public Publisher relayPublisher() {
                String[] user = userInfo();
                return new RabbitMqPublisher(RabbitMqPublisherConfig.builder().host(url.getHost())
                        .port(url.getPort() < 0 ? 5672 : url.getPort()).username(user[0]).password(user[1]).exchange(name).connectionName("relaybench").build());
            }

            @Override
            public double publishRaw(List<OutboxEvent> events) throws Exception {
                return publishPipelined(name, events);
            }

            @Override
            public long held() throws Exception {
                return channel.queueDeclarePassive(name).getMessageCount();
            }

            @Override
            public void close() throws Exception {
                try {
                    channel.queueDelete(name);
                    channel.exchangeDelete(name);
                } finally {
                    admin.close();
                }
            }
        };
    }

    private double publishPipelined(String exchange, List<OutboxEvent> events) throws Exception {
        try (Connection connection = factory.newConnection("relaybench-raw")) {
            Channel channel = connection.createChannel();
            channel.confirmSelect();
            Semaphore window = new Semaphore(CONFIRM_WINDOW);
            ConcurrentNavigableMap<Long, Boolean> unconfirmed = new ConcurrentSkipListMap<>();
            AtomicReference<String> failure = new AtomicReference<>();
            AtomicLong returned = new AtomicLong();
            channel.addReturnListener(message -> returned.incrementAndGet());
            channel.addConfirmListener((tag, multiple) -> window.release(settle(unconfirmed, tag, multiple)),
                    (tag, multiple) -> {
                        failure.compareAndSet(null, "RabbitMQ nacked message " + tag);
                        window.release(settle(unconfirmed, tag, multiple));
                    });
            long started = System.nanoTime();
            for (OutboxEvent event : events) {
                if (!window.tryAcquire(CONFIRM_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("RabbitMQ confirmed nothing for " + CONFIRM_WAIT);
                }
                unconfirmed.put(channel.getNextPublishSeqNo(), Boolean.TRUE);
                channel.basicPublish(exchange, event.topic(), true, properties(event),
                        event.payloadJson().getBytes(StandardCharsets.UTF_8));
            }
            channel.waitForConfirmsOrDie(CONFIRM_WAIT.toMillis());
            double seconds = (System.nanoTime() - started) / 1e9;
            if (failure.get() != null || returned.get() > 0) {
                throw new IllegalStateException("the raw publish lost messages: " + failure.get() + "; " + returned.get()
                        + " returned unroutable");
            }
            return seconds;
        }
    }

    /** Forgets the confirmed (or nacked) sequence numbers and returns how many they were. */
    private static int settle(ConcurrentNavigableMap<Long, Boolean> unconfirmed, long tag, boolean multiple) {
        if (!multiple) {
            return unconfirmed.remove(tag) == null ? 0 : 1;
        }
        ConcurrentNavigableMap<Long, Boolean> settled = unconfirmed.headMap(tag, true);
        int count = settled.size();
        settled.clear();
        return count;
    }

    /** The properties RabbitMqPublisher sends for an event without headers or trace context of its own. */
    private static AMQP.BasicProperties properties(OutboxEvent event) {
        Map<String, Object> headers = new HashMap<>();
        headers.put(OutboxHeaders.TENANT, event.tenant());
        headers.put(OutboxHeaders.TOPIC, event.topic());
        headers.put(OutboxHeaders.PARTITION_KEY, event.partitionKey());
        return new AMQP.BasicProperties.Builder()
                .messageId(event.messageId())
                .contentType("application/json")
                .contentEncoding("utf-8")
                .deliveryMode(2)
                .headers(headers)
                .build();
    }

    private String[] userInfo() {
        String info = url.getUserInfo() == null ? "guest:guest" : url.getUserInfo();
        int colon = info.indexOf(':');
        return colon < 0 ? new String[] {info, ""} : new String[] {info.substring(0, colon), info.substring(colon + 1)};
    }

    @Override
    public void close() {
    }
}

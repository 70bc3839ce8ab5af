package dev.idempotency.benchmarks.sections;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * RabbitMQ for the consumers section: a queue of the cell's own (non-durable, deleted after), filled
 * with publisher confirms, read by a consumer with a prefetch of the batch size whose deliveries are
 * gathered into a batch (the first waited for up to a second, the rest as they come), and acknowledged
 * with one {@code basicAck(lastTag, multiple=true)}, as the example does.
 */
final class RabbitMqConsumerBroker implements ConsumerBroker {
    /** Publishes in flight while filling, between waits for their confirms. */
    private static final int FILL_WINDOW = 1_000;
    private static final Duration FIRST_WAIT = Duration.ofSeconds(1);
    /** How long a batch waits for each further delivery: the prefetch has them on the way. */
    private static final Duration NEXT_WAIT = Duration.ofMillis(200);

    private final Connection connection;

    private RabbitMqConsumerBroker(Connection connection) {
        this.connection = connection;
    }

    /** Connects to RabbitMQ at {@code uri} (amqp://user:password@host:port); fails naming it when nothing answers. */
    static RabbitMqConsumerBroker connect(String url) {
        ConnectionFactory factory = new ConnectionFactory();
        URI uri = URI.create(url);
        try {
            factory.setUri(uri);
            return new RabbitMqConsumerBroker(factory.newConnection("consumers-bench"));
        } catch (IOException | TimeoutException | java.security.GeneralSecurityException e) {
            throw new IllegalStateException("RabbitMQ at " + uri.getHost() + ":" + uri.getPort() + " does not answer ("
                    + e.getMessage() + "); start it, or leave out the consumers section", e);
        }
    }

    @Override
    public String label() {
        return "RabbitMQ prefetch";
    }

    @Override
    public Batches fill(int messages, int batch) throws Exception {
        Channel channel = connection.createChannel();
        String queue = "consumers-bench-" + UUID.randomUUID();
        try {
            channel.queueDeclare(queue, false, false, false, null);
            channel.confirmSelect();
            for (int m = 0; m < messages; m++) {
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(UUID.randomUUID().toString()).headers(Map.of(OutboxHeaders.TENANT, TENANT)).build();
                channel.basicPublish("", queue, properties, Long.toString(100 + m % 10_000).getBytes(StandardCharsets.UTF_8));
                if ((m + 1) % FILL_WINDOW == 0 || m == messages - 1) {
                    channel.waitForConfirmsOrDie(30_000);
                }
            }
            BlockingQueue<Delivery> delivered = new LinkedBlockingQueue<>();
            channel.basicQos(batch);
            String tag = channel.basicConsume(queue, false, (consumerTag, delivery) -> delivered.add(delivery), consumerTag -> { });
            return new Batches() {
                @Override
                public List<Received> next() throws InterruptedException {
                    List<Received> received = new ArrayList<>(batch);
                    Delivery delivery = delivered.poll(FIRST_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    while (delivery != null) {
                        received.add(new Received(delivery, delivery.getProperties().getMessageId(),
                                String.valueOf(delivery.getProperties().getHeaders().get(OutboxHeaders.TENANT)),
                                Long.parseLong(new String(delivery.getBody(), StandardCharsets.UTF_8))));
                        delivery = received.size() == batch ? null : delivered.poll(NEXT_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    }
                    return received;
                }

                @Override
                public void acknowledge(List<Received> acknowledged) throws IOException {
                    Delivery last = (Delivery) acknowledged.get(acknowledged.size() - 1).message();
                    channel.basicAck(last.getEnvelope().getDeliveryTag(), true); // the whole batch in one frame
                }

                @Override
                public void awaitAcknowledgements() {
                    // An ack has no answer; the queue's deletion at close comes after it on the same channel.
                }

                @Override
                public void close() throws IOException, TimeoutException {
                    try {
                        channel.basicCancel(tag);
                        channel.queueDelete(queue);
                    } finally {
                        channel.close();
                    }
                }
            };
        } catch (Exception | Error e) {
            channel.queueDelete(queue);
            channel.close();
            throw e;
        }
    }

    @Override
    public void close() throws IOException {
        connection.close();
    }
}

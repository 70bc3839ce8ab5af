package dev.idempotency.faults;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.util.Map;
import java.util.UUID;

/**
 * A queue of the test's own on the shared RabbitMQ (named with a random suffix, deleted at close),
 * consumed directly (not through any proxy) into a {@link PublishedEvents}.
 */
final class RabbitMqQueue implements AutoCloseable {
    private final Connection connection;
    private final Channel channel;
    private final String name;

    RabbitMqQueue(String prefix, PublishedEvents published) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(5672);
        this.connection = factory.newConnection("fault-tests-consumer");
        this.channel = connection.createChannel();
        this.name = prefix + "-" + UUID.randomUUID();
        channel.queueDeclare(name, false, false, false, null);
        channel.basicConsume(name, true, (tag, delivery) -> {
            Map<String, Object> headers = delivery.getProperties().getHeaders();
            published.record(delivery.getProperties().getMessageId(),
                    String.valueOf(headers.get("Outbox-Tenant")), String.valueOf(headers.get("Outbox-Topic")),
                    String.valueOf(headers.get("Outbox-Partition-Key")));
        }, tag -> { });
    }

    /** The queue name, which is also the topic to publish to through the default exchange. */
    String name() {
        return name;
    }

    @Override
    public void close() throws Exception {
        try {
            channel.queueDelete(name);
        } finally {
            connection.close();
        }
    }
}

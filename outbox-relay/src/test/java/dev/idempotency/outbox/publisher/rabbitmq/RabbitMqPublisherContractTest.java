package dev.idempotency.outbox.publisher.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.PublisherContract;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** The publisher contract against the RabbitMQ at 127.0.0.1:5672, on a queue of its own (the default exchange). */
class RabbitMqPublisherContractTest extends PublisherContract {
    private final String queue = "outbox-contract-" + UUID.randomUUID().toString().substring(0, 8);
    private Connection connection;
    private Channel channel;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @BeforeEach
    void declareQueue() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(Brokers.RABBITMQ_PORT);
        connection = factory.newConnection(queue);
        channel = connection.createChannel();
        channel.queueDeclare(queue, false, false, true, null);
    }

    @AfterEach
    void deleteQueue() throws Exception {
        channel.queueDelete(queue);
        connection.close();
    }

    @Override
    protected String topic() {
        return queue;
    }

    @Override
    protected Publisher reachablePublisher() {
        return new RabbitMqPublisher(RabbitMqPublisherConfig.builder()
                .host("127.0.0.1").port(Brokers.RABBITMQ_PORT).build());
    }

    @Override
    protected Publisher unreachablePublisher(int closedPort) {
        return new RabbitMqPublisher(RabbitMqPublisherConfig.builder()
                .host("127.0.0.1").port(closedPort).connectTimeout(Duration.ofSeconds(2)).build());
    }

    @Override
    protected List<Arrived> arrived(int count) throws Exception {
        List<Arrived> arrived = new ArrayList<>();
        Await.until(count + " messages on " + queue, Duration.ofSeconds(20), () -> {
            GetResponse response = channel.basicGet(queue, true);
            if (response != null) {
                Map<String, Object> headers = response.getProps().getHeaders();
                arrived.add(new Arrived(response.getProps().getMessageId(), String.valueOf(headers.get(OutboxHeaders.TENANT)),
                        String.valueOf(headers.get(OutboxHeaders.TOPIC)), String.valueOf(headers.get(OutboxHeaders.PARTITION_KEY)),
                        trace(name -> headers.containsKey(name) ? String.valueOf(headers.get(name)) : null)));
            }
            return arrived.size() >= count;
        });
        return arrived;
    }
}

package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.PublisherContract;
import dev.idempotency.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

/** The publisher contract against a Kafka test broker of this class, a topic of its own per test. */
class KafkaPublisherContractTest extends PublisherContract {
    private static KafkaTestBroker broker;
    private final String topic = "outbox-contract-" + UUID.randomUUID().toString().substring(0, 8);

    @BeforeAll
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    static void startBroker() {
        broker = KafkaTestBroker.start();
    }

    @AfterAll
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void createTopic() {
        broker.createTopic(topic, 2, Map.of());
    }

    @Override
    protected String topic() {
        return topic;
    }

    @Override
    protected Publisher reachablePublisher() {
        return new KafkaPublisher(KafkaPublisherConfig.builder().bootstrapServers(broker.bootstrapServers()).build());
    }

    @Override
    protected Publisher unreachablePublisher(int closedPort) {
        return new KafkaPublisher(KafkaPublisherConfig.builder()
                .bootstrapServers("127.0.0.1:" + closedPort).publishTimeout(Duration.ofSeconds(2))
                .build());
    }

    @Override
    protected List<Arrived> arrived(int count) {
        Map<String, Object> settings = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<Arrived> arrived = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (arrived.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    Headers headers = record.headers();
                    arrived.add(new Arrived(header(headers, KafkaPublisher.MESSAGE_ID_HEADER),
                            header(headers, KafkaPublisher.TENANT_HEADER), header(headers, KafkaPublisher.TOPIC_HEADER),
                            header(headers, KafkaPublisher.PARTITION_KEY_HEADER), trace(name -> all(headers, name))));
                }
            }
        }
        return arrived;
    }

    /** Every value of a header, joined with a comma; null when absent. */
    private static String all(Headers headers, String name) {
        List<String> values = new ArrayList<>();
        headers.headers(name).forEach(header -> values.add(new String(header.value(), StandardCharsets.UTF_8)));
        return values.isEmpty() ? null : String.join(",", values);
    }

    private static String header(Headers headers, String name) {
        return headers.lastHeader(name) == null ? null : new String(headers.lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}

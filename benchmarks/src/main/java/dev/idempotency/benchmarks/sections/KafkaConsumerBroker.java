package dev.idempotency.benchmarks.sections;

import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka for the consumers section: the tests' single-node broker ({@link KafkaTestBroker}, test-support's)
 * started in this JVM (in a container where Docker works), a one-partition topic of the cell's own filled by one producer, read by
 * a consumer with {@code max.poll.records} the batch size, and acknowledged with {@code commitSync} of
 * the offset after each batch's last record.
 */
final class KafkaConsumerBroker implements ConsumerBroker {
    private static final Duration POLL_WAIT = Duration.ofSeconds(1);

    private final KafkaTestBroker broker;
    private final KafkaProducer<String, String> producer;

    private KafkaConsumerBroker(KafkaTestBroker broker) {
        this.broker = broker;
        this.producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024),
                new StringSerializer(), new StringSerializer());
    }

    /** Starts the broker (in this JVM where Docker is missing, else in a container) and a producer. */
    static KafkaConsumerBroker start() {
        KafkaTestBroker broker = KafkaTestBroker.start();
        try {
            return new KafkaConsumerBroker(broker);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
    }

    @Override
    public String label() {
        return "Kafka poll";
    }

    @Override
    public Batches fill(int messages, int batch) {
        String topic = "consumers-" + UUID.randomUUID();
        broker.createTopic(topic, 1, Map.of());
        for (int m = 0; m < messages; m++) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, null, Long.toString(100 + m % 10_000));
            record.headers().add(KafkaPublisher.MESSAGE_ID_HEADER, UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
            record.headers().add(KafkaPublisher.TENANT_HEADER, TENANT.getBytes(StandardCharsets.UTF_8));
            producer.send(record);
        }
        producer.flush();
        TopicPartition partition = new TopicPartition(topic, 0);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, topic,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, batch), new StringDeserializer(), new StringDeserializer());
        consumer.assign(List.of(partition));
        return new Batches() {
            @Override
            public List<Received> next() {
                List<Received> received = new ArrayList<>(batch);
                for (ConsumerRecord<String, String> record : consumer.poll(POLL_WAIT)) {
                    received.add(new Received(record, header(record, KafkaPublisher.MESSAGE_ID_HEADER),
                            header(record, KafkaPublisher.TENANT_HEADER), Long.parseLong(record.value())));
                }
                return received;
            }

            @Override
            public void acknowledge(List<Received> acknowledged) {
                ConsumerRecord<?, ?> last = (ConsumerRecord<?, ?>) acknowledged.get(acknowledged.size() - 1).message();
                consumer.commitSync(Map.of(partition, new OffsetAndMetadata(last.offset() + 1)));
            }

            @Override
            public void awaitAcknowledgements() {
                // commitSync returned: the broker has them.
            }

            @Override
            public void close() {
                consumer.close();
            }
        };
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        try {
            producer.close();
        } finally {
            broker.close();
        }
    }
}

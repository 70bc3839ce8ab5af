package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisherConfig;
import dev.idempotency.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Section 14's Kafka: a single-node broker started for the section ({@link KafkaTestBroker}: in a
 * container where Docker works, otherwise inside this JVM, where it shares the JVM's cores with the
 * relay), and a topic of {@link #PARTITIONS} partitions per cell. The client alone sends every record
 * through one idempotent producer with {@code acks=all} (the client's other settings at their
 * defaults) and flushes, every send's callback checked.
 */
final class KafkaPath implements BrokerPath {
    /** Partitions of each cell's topic: several, as a topic keyed by partition key has. */
    static final int PARTITIONS = 8;

    private final KafkaTestBroker broker;

    KafkaPath() {
        this.broker = KafkaTestBroker.start();
    }

    @Override
    public String name() {
        return "Kafka";
    }

    @Override
    public String rawWay() {
        return "kafka-clients idempotent producer, acks=all, send all then flush";
    }

    @Override
    public Destination open() {
        String prefix = "relaybench-" + UUID.randomUUID().toString().replace("-", "").substring(0, 10) + ".";
        String topic = prefix + RelayBenchSql.FILL_TOPIC;
        broker.createTopic(topic, PARTITIONS, Map.of());
        return new Destination() {
            @Override
            public Publisher relayPublisher() {
                return new KafkaPublisher(KafkaPublisherConfig.builder().bootstrapServers(broker.bootstrapServers()).topicPrefix(prefix)
                        .clientId("relaybench").build());
            }

            @Override
            public double publishRaw(List<OutboxEvent> events) {
                Properties settings = new Properties();
                settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
                settings.put(ProducerConfig.CLIENT_ID_CONFIG, "relaybench-raw");
                settings.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
                settings.put(ProducerConfig.ACKS_CONFIG, "all");
                settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
                settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
                AtomicReference<Exception> failure = new AtomicReference<>();
                AtomicLong acked = new AtomicLong();
                try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings)) {
                    long started = System.nanoTime();
                    for (OutboxEvent event : events) {
                        producer.send(record(topic, event), (metadata, e) -> {
                            if (e != null) {
                                failure.compareAndSet(null, e);
                            } else {
                                acked.incrementAndGet();
                            }
                        });
                    }
                    producer.flush();
                    double seconds = (System.nanoTime() - started) / 1e9;
                    if (failure.get() != null || acked.get() != events.size()) {
                        throw new IllegalStateException("the raw publish lost messages: " + acked.get() + " of " + events.size()
                                + " acknowledged", failure.get());
                    }
                    return seconds;
                }
            }

            @Override
            public long held() {
                Map<String, Object> settings = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
                        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
                try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
                    List<TopicPartition> partitions = IntStream.range(0, PARTITIONS)
                            .mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
                    return consumer.endOffsets(partitions).values().stream().mapToLong(Long::longValue).sum();
                }
            }

            @Override
            public void close() {
                // The topic goes with the broker's log directory when the section ends.
            }
        };
    }

    /** The record KafkaPublisher sends for an event without headers or trace context of its own. */
    private static ProducerRecord<byte[], byte[]> record(String topic, OutboxEvent event) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, utf8(event.partitionKey()), utf8(event.payloadJson()));
        Headers headers = record.headers();
        headers.add(KafkaPublisher.MESSAGE_ID_HEADER, utf8(event.messageId()));
        headers.add(KafkaPublisher.TENANT_HEADER, utf8(event.tenant()));
        headers.add(KafkaPublisher.TOPIC_HEADER, utf8(event.topic()));
        headers.add(KafkaPublisher.PARTITION_KEY_HEADER, utf8(event.partitionKey()));
        return record;
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        broker.close();
    }
}

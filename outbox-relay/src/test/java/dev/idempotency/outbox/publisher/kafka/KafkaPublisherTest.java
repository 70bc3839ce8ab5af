package dev.idempotency.outbox.publisher.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KafkaPublisherTest {
    private static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);
    private static final AtomicLong ids = new AtomicLong(1_000);

    private static KafkaTestBroker broker;

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

    @Test
    void sendsEachEventWithItsKeyPayloadAndHeadersWhichItsOwnHeadersCannotOverride() {
        String topic = newTopic(3, Map.of());
        OutboxEvent order = event("tenant-a", topic, "order-17", "{\"total\":42}",
                Map.of("trace-id", "abc", "Content-Type", "application/json", KafkaPublisher.TENANT_HEADER, "spoofed"));
        OutboxEvent refund = event("tenant-b", topic, "order-18", "{\"refund\":\"€5\"}", Map.of());

        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder())) {
            List<PublishResult> results = publisher.publish(List.of(order, refund));
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED), statuses(results));
        }

        Map<String, ConsumerRecord<byte[], byte[]>> byMessageId = consume(topic, 2).stream()
                .collect(Collectors.toMap(r -> header(r, KafkaPublisher.MESSAGE_ID_HEADER), r -> r));
        ConsumerRecord<byte[], byte[]> first = byMessageId.get(order.messageId());
        assertNotNull(first, "a record whose message id is the event's message id");
        assertEquals("order-17", utf8(first.key()));
        assertEquals("{\"total\":42}", utf8(first.value()));
        assertEquals("tenant-a", header(first, KafkaPublisher.TENANT_HEADER), "the event's own Outbox-Tenant dropped");
        assertEquals(topic, header(first, KafkaPublisher.TOPIC_HEADER));
        assertEquals("order-17", header(first, KafkaPublisher.PARTITION_KEY_HEADER));
        assertEquals("abc", header(first, "trace-id"));
        assertEquals("application/json", header(first, "Content-Type"));
        assertEquals(6, first.headers().toArray().length, "the event's two headers and the publisher's four");

        ConsumerRecord<byte[], byte[]> second = byMessageId.get(refund.messageId());
        assertNotNull(second);
        assertEquals("order-18", utf8(second.key()));
        assertEquals("{\"refund\":\"€5\"}", utf8(second.value()));
        assertEquals("tenant-b", header(second, KafkaPublisher.TENANT_HEADER));
    }

    @Test
    void keepsEachPartitionKeysEventsInPublishOrderOnOnePartition() {
        String topic = newTopic(4, Map.of());
        List<String> keys = List.of("k1", "k2", "k3", "k4", "k5", "k6");
        List<OutboxEvent> sent = new ArrayList<>();
        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder())) {
            for (int batch = 0; batch < 3; batch++) {
                // Interleaved keys, several events of one key in one batch, and the same keys again in the next.
                List<OutboxEvent> events = new ArrayList<>();
                for (int round = 0; round < 5; round++) {
                    for (String key : keys) {
                        String json = "{\"batch\":" + batch + ",\"round\":" + round + "}";
                        events.add(event("t", topic, key, json, Map.of()));
                    }
                }
                List<PublishResult> results = publisher.publish(events);
                assertEquals(events.size(), results.size());
                assertTrue(results.stream().allMatch(r -> r.status() == Status.PUBLISHED), results::toString);
                sent.addAll(events);
            }
        }

        List<ConsumerRecord<byte[], byte[]>> received = consume(topic, sent.size());
        for (String key : keys) {
            List<String> expected = sent.stream().filter(e -> e.partitionKey().equals(key))
                    .map(OutboxEvent::messageId).toList();
            List<ConsumerRecord<byte[], byte[]>> ofKey = received.stream()
                    .filter(r -> utf8(r.key()).equals(key)).toList();
            assertEquals(expected, ofKey.stream().map(r -> header(r, KafkaPublisher.MESSAGE_ID_HEADER)).toList(),
                    "events of key " + key + " in publish order");
            assertEquals(1, ofKey.stream().map(ConsumerRecord::partition).distinct().count(),
                    "events of key " + key + " on one partition");
        }
    }

    @Test
    void aBatchIsSentAtOnceInsteadOfWaitingOutLingerMs() {
        String topic = newTopic(4, Map.of());
        List<OutboxEvent> batch = IntStream.range(0, 200)
                .mapToObj(i -> event("t", topic, "key-" + i, "{\"n\":" + i + "}", Map.of())).toList();

        List<PublishResult> results;
        long took;
        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder().producerProperty("linger.ms", "40000"),
                Duration.ofSeconds(90))) {
            publisher.publish(List.of(event("t", topic, "warm-up", "{}", Map.of())));
            long started = System.nanoTime();
            results = publisher.publish(batch);
            took = System.nanoTime() - started;
        }

        assertTrue(statuses(results).stream().allMatch(Status.PUBLISHED::equals), results::toString);
        assertTrue(took < Duration.ofSeconds(20).toNanos(), "the batch took " + took / 1_000_000 + " ms; linger.ms is 40 s");
        assertEquals(201, consume(topic, 201).size());
    }

    @Test
    void putsTheConfiguredPrefixInFrontOfTheTopic() {
        String suffix = randomSuffix();
        String prefixedTopic = "staging.orders-" + suffix;
        broker.createTopic(prefixedTopic, 1, Map.of());
        OutboxEvent event = event("t", "orders-" + suffix, "o-1", "{}", Map.of());

        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder().topicPrefix("staging."))) {
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event))));
        }

        ConsumerRecord<byte[], byte[]> record = consume(prefixedTopic, 1).get(0);
        assertEquals("orders-" + suffix, header(record, KafkaPublisher.TOPIC_HEADER), "the event's own topic");
    }

    @Test
    void rejectsRecordsTooLargeForTheProducerOrTheTopicAndStillPublishesTheRest() {
        // The topic takes records up to 10 kB; the producer sends requests up to 100 kB.
        String topic = newTopic(1, Map.of("max.message.bytes", "10000"));
        OutboxEvent small = event("t", topic, "a", "{\"n\":1}", Map.of());
        OutboxEvent tooLargeForTopic = event("t", topic, "b", jsonOfSize(50_000), Map.of());
        OutboxEvent tooLargeForProducer = event("t", topic, "c", jsonOfSize(200_000), Map.of());
        OutboxEvent alsoSmall = event("t", topic, "d", "{\"n\":2}", Map.of());

        List<PublishResult> results;
        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder()
                .producerProperty("max.request.size", "100000")
                .producerProperty("compression.type", "none"))) {
            results = publisher.publish(List.of(small, tooLargeForTopic, tooLargeForProducer, alsoSmall));
        }

        assertEquals(List.of(Status.PUBLISHED, Status.REJECTED, Status.REJECTED, Status.PUBLISHED), statuses(results));
        assertTrue(results.get(1).error().contains("RecordTooLarge"), results.get(1).error());
        assertTrue(results.get(2).error().contains("RecordTooLarge"), results.get(2).error());
        assertEquals(List.of("a", "d"), consume(topic, 2).stream().map(r -> utf8(r.key())).sorted().toList());
    }

    @Test
    void rejectsAnEventWhoseTopicIsNotALegalKafkaName() {
        OutboxEvent illegal = event("t", "orders/eu", "k", "{}", Map.of());

        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder())) {
            List<PublishResult> results = publisher.publish(List.of(illegal));

            assertEquals(List.of(Status.REJECTED), statuses(results));
            assertTrue(results.get(0).error().contains("orders/eu"), results.get(0).error());
        }
    }

    @Test
    void rejectsAnEventForATopicTheRelayMayNotWriteToAndKeepsPublishingOthers() {
        String forbidden = newTopic(1, Map.of());
        broker.denyWrites(forbidden);
        String allowed = newTopic(1, Map.of());

        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder())) {
            List<PublishResult> results = publisher.publish(List.of(
                    event("t", allowed, "a", "{}", Map.of()),
                    event("t", forbidden, "b", "{}", Map.of())));
            List<PublishResult> next = publisher.publish(List.of(event("t", allowed, "c", "{}", Map.of())));

            assertEquals(List.of(Status.PUBLISHED, Status.REJECTED), statuses(results));
            assertTrue(results.get(1).error().contains("TopicAuthorization"), results.get(1).error());
            assertEquals(List.of(Status.PUBLISHED), statuses(next), "the producer still works after the refusal");
        }
        assertEquals(List.of("a", "c"), consume(allowed, 2).stream().map(r -> utf8(r.key())).sorted().toList());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void returnsUnavailableForTheWholeBatchWithinTheTimeoutWhenNoBrokerListens() {
        int closedPort = KafkaTestBroker.freePort();
        // Each send to an unknown broker blocks for metadata (1 s here): one by one, 100 would take 100 s.
        List<OutboxEvent> events = IntStream.range(0, 100)
                .mapToObj(i -> event("t", "topic-" + (i % 10), "k" + i, "{}", Map.of()))
                .toList();

        List<PublishResult> results;
        try (KafkaPublisher publisher = new KafkaPublisher(KafkaPublisherConfig.builder()
                .bootstrapServers("127.0.0.1:" + closedPort)
                .publishTimeout(Duration.ofSeconds(2))
                .build())) {
            results = publisher.publish(events);
        }

        assertEquals(events.size(), results.size());
        assertTrue(results.stream().allMatch(r -> r.status() == Status.UNAVAILABLE), results::toString);
    }

    @Test
    void returnsUnavailableWithinTheTimeoutWhenTheBrokerGoesAwayAfterThePublisherConnected() {
        List<PublishResult> before;
        List<PublishResult> after;
        KafkaTestBroker doomed = KafkaTestBroker.start();
        try (KafkaPublisher publisher = new KafkaPublisher(KafkaPublisherConfig.builder()
                .bootstrapServers(doomed.bootstrapServers())
                .publishTimeout(Duration.ofSeconds(3))
                .build())) {
            String topic = "outbox-test-" + randomSuffix();
            doomed.createTopic(topic, 2, Map.of());
            before = publisher.publish(List.of(event("t", topic, "k", "{}", Map.of())));
            doomed.close();

            after = publisher.publish(IntStream.range(0, 100)
                    .mapToObj(i -> event("t", topic, "k" + i, "{}", Map.of())).toList());
        } finally {
            doomed.close();
        }

        assertEquals(List.of(Status.PUBLISHED), statuses(before));
        assertEquals(100, after.size());
        assertTrue(after.stream().allMatch(r -> r.status() == Status.UNAVAILABLE), after::toString);
    }

    @Test
    void aProducerThatFailedForGoodIsReplacedOnTheNextBatch() {
        String topic = newTopic(1, Map.of());
        List<Producer<byte[], byte[]>> created = new CopyOnWriteArrayList<>();
        List<PublishResult> first;
        List<PublishResult> broken;
        List<PublishResult> next;
        try (KafkaPublisher publisher = new KafkaPublisher(KafkaPublisherConfig.builder()
                .bootstrapServers(broker.bootstrapServers()).publishTimeout(Duration.ofSeconds(60)).build(), settings -> {
                    Producer<byte[], byte[]> producer = new KafkaProducer<>(settings);
                    created.add(producer);
                    return producer;
                })) {
            first = publisher.publish(List.of(event("t", topic, "a", "{}", Map.of())));
            // The producer fails for good underneath the publisher: every later send throws IllegalStateException.
            created.get(0).close();
            broken = publisher.publish(List.of(event("t", topic, "b", "{}", Map.of())));
            next = publisher.publish(List.of(event("t", topic, "b", "{}", Map.of())));
        }

        assertEquals(List.of(Status.PUBLISHED), statuses(first));
        assertEquals(List.of(Status.UNAVAILABLE), statuses(broken));
        assertTrue(broken.get(0).error().contains("producer has been closed"), broken.get(0).error());
        assertEquals(List.of(Status.PUBLISHED), statuses(next), "the next batch went through a new producer");
        assertEquals(2, created.size());
        assertEquals(List.of("a", "b"), consume(topic, 2).stream().map(r -> utf8(r.key())).toList());
    }

    @Test
    void returnsRetryForAnEventWhoseTopicDoesNotExistAndPublishesTheOthers() {
        String topic = newTopic(1, Map.of());
        OutboxEvent existing = event("t", topic, "k", "{}", Map.of());
        OutboxEvent missing = event("t", "no-such-topic-" + randomSuffix(), "k", "{}", Map.of());

        List<PublishResult> results;
        try (KafkaPublisher publisher = publisher(KafkaPublisherConfig.builder(), Duration.ofSeconds(4))) {
            results = publisher.publish(List.of(existing, missing));
        }

        assertEquals(List.of(Status.PUBLISHED, Status.RETRY), statuses(results));
        assertTrue(results.get(1).error().contains("not present in metadata"), results.get(1).error());
        assertEquals(1, consume(topic, 1).size());
    }

    private static KafkaPublisher publisher(KafkaPublisherConfig.Builder builder) {
        return publisher(builder, Duration.ofSeconds(60));
    }

    private static KafkaPublisher publisher(KafkaPublisherConfig.Builder builder, Duration publishTimeout) {
        return new KafkaPublisher(builder.bootstrapServers(broker.bootstrapServers())
                .clientId("kafka-publisher-test")
                .publishTimeout(publishTimeout)
                .build());
    }

    private static String newTopic(int partitions, Map<String, String> configs) {
        String topic = "outbox-test-" + randomSuffix();
        broker.createTopic(topic, partitions, configs);
        return topic;
    }

    private static String randomSuffix() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    private static OutboxEvent event(String tenant, String topic, String key, String json,
                                     Map<String, String> headers) {
        return new OutboxEvent(ids.incrementAndGet(), UUID.randomUUID().toString(), tenant, topic, key, json, headers, Instant.now(), 1);
    }

    /** Reads every partition of {@code topic} from the start until {@code count} records arrived. */
    private static List<ConsumerRecord<byte[], byte[]>> consume(String topic, int count) {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<byte[], byte[]>> received = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, CONSUME_TIMEOUT).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + CONSUME_TIMEOUT.toNanos();
            while (received.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(received::add);
            }
            // One more poll: a record beyond the expected count would be a duplicate or a stray.
            consumer.poll(Duration.ofMillis(500)).forEach(received::add);
        }
        assertEquals(count, received.size(), "records on " + topic);
        return received;
    }

    private static List<Status> statuses(List<PublishResult> results) {
        return results.stream().map(PublishResult::status).toList();
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        List<Header> matching = new ArrayList<>();
        record.headers().headers(name).forEach(matching::add);
        assertEquals(1, matching.size(), "exactly one " + name + " header");
        return utf8(matching.get(0).value());
    }

    private static String jsonOfSize(int bytes) {
        return "\"" + "x".repeat(bytes - 2) + "\"";
    }

    private static String utf8(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}

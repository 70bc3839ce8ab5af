package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.OutboxEvent;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Turns an outbox event into the Kafka record KafkaPublisher sends: topic, key, value and headers. */
final class OutboxRecords {
    private static final Logger log = LoggerFactory.getLogger(OutboxRecords.class);
    private static final Set<String> RESERVED_HEADERS = Set.of(KafkaPublisher.MESSAGE_ID_HEADER,
            KafkaPublisher.TENANT_HEADER, KafkaPublisher.TOPIC_HEADER, KafkaPublisher.PARTITION_KEY_HEADER);

    /** Topics already checked, at most this many, so that a relay's few topics are checked once each. */
    private static final int CHECKED_TOPICS = 1024;

    private final String topicPrefix;
    /** Event topic to legal Kafka topic, for topics that passed the check. */
    private final Map<String, String> checked = new ConcurrentHashMap<>();

    OutboxRecords(String topicPrefix) {
        this.topicPrefix = topicPrefix;
    }

    /** The Kafka topic for {@code event}; throws IllegalArgumentException if Kafka would refuse the name. */
    String topic(OutboxEvent event) {
        String known = checked.get(event.topic());
        if (known != null) {
            return known;
        }
        String topic = checkedTopic(topicPrefix + event.topic());
        if (checked.size() < CHECKED_TOPICS) {
            checked.put(event.topic(), topic);
        }
        return topic;
    }

    private static String checkedTopic(String topic) {
        if (!KafkaPublisherConfig.TOPIC_NAME.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            throw new IllegalArgumentException("'" + topic + "' is not a legal Kafka topic name (1 to 249 letters,"
                    + " digits, '.', '_' or '-')");
        }
        return topic;
    }

    /**
     * The record: key = partition key, so one key always lands on one partition in order; value = the
     * JSON payload; headers = the event's own, then the reserved ones, which an event header of the same
     * name cannot replace, then the writer's trace context ({@code traceparent}, {@code tracestate}) when
     * the event has one, in place of any event header of those names.
     */
    ProducerRecord<byte[], byte[]> record(OutboxEvent event) {
        ProducerRecord<byte[], byte[]> record =
                new ProducerRecord<>(topic(event), utf8(event.partitionKey()), utf8(event.payloadJson()));
        Headers headers = record.headers();
        for (Map.Entry<String, String> header : event.headers().entrySet()) {
            if (RESERVED_HEADERS.contains(header.getKey())) {
                log.warn("outbox event {} has its own header {}; the publisher's value is sent instead",
                        event.id(), header.getKey());
            } else {
                headers.add(header.getKey(), utf8(header.getValue()));
            }
        }
        headers.add(KafkaPublisher.MESSAGE_ID_HEADER, utf8(event.messageId()));
        headers.add(KafkaPublisher.TENANT_HEADER, utf8(event.tenant()));
        headers.add(KafkaPublisher.TOPIC_HEADER, utf8(event.topic()));
        headers.add(KafkaPublisher.PARTITION_KEY_HEADER, utf8(event.partitionKey()));
        // The writer's trace context, as stored: replaces an event header of the same name.
        event.traceHeaders().forEach((name, value) -> headers.remove(name).add(name, utf8(value)));
        return record;
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}

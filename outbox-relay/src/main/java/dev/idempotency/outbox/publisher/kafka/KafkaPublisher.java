package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox events to Kafka with an idempotent producer ({@code enable.idempotence=true},
 * {@code acks=all}): each event becomes one record on topic {@code topicPrefix + event.topic()}, keyed
 * by its partition key (so a key's events share a partition and keep their order), with the JSON payload
 * as UTF-8 value and these headers, all UTF-8 strings:
 * <ul>
 *   <li>{@value #MESSAGE_ID_HEADER}: the event's message id ({@link OutboxEvent#messageId()}, unique
 *       across outboxes); consumers use it as their idempotency key,</li>
 *   <li>{@value #TENANT_HEADER}, {@value #TOPIC_HEADER} (the event's topic, without prefix),
 *       {@value #PARTITION_KEY_HEADER},</li>
 *   <li>the event's own headers, except any that reuse one of the four names above.</li>
 * </ul>
 *
 * <p>A {@link #publish} hands the whole batch to the producer, then waits for all acknowledgements
 * together, and returns within {@link KafkaPublisherConfig#publishTimeout()} of its start: events not
 * acknowledged by then are RETRY, so a broker outage costs one timeout per batch, not one per event.
 * Safe for concurrent use by several threads.
 */
public final class KafkaPublisher implements Publisher {
    /** Header carrying {@link OutboxEvent#messageId()}, the consumer's idempotency key (named as in HTTP). */
    public static final String MESSAGE_ID_HEADER = "Idempotency-Key";
    /** Header carrying {@link OutboxEvent#tenant()}. */
    public static final String TENANT_HEADER = OutboxHeaders.TENANT;
    /** Header carrying {@link OutboxEvent#topic()}, as recorded, before any prefix. */
    public static final String TOPIC_HEADER = OutboxHeaders.TOPIC;
    /** Header carrying {@link OutboxEvent#partitionKey()}, also the record key. */
    public static final String PARTITION_KEY_HEADER = OutboxHeaders.PARTITION_KEY;

    private static final Logger log = LoggerFactory.getLogger(KafkaPublisher.class);

    private final KafkaPublisherConfig config;
    private final OutboxRecords records;
    private final Producer<byte[], byte[]> producer;

    /** Creates the producer; it connects lazily, so an unreachable broker shows up as RETRY results. */
    public KafkaPublisher(KafkaPublisherConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.records = new OutboxRecords(config.topicPrefix());
        this.producer = new KafkaProducer<>(config.producerSettings());
    }

    /** Builds a publisher from string settings; see {@link KafkaPublisherConfig#fromSettings(Map)}. */
    public static KafkaPublisher fromSettings(Map<String, String> settings) {
        return new KafkaPublisher(KafkaPublisherConfig.fromSettings(settings));
    }

    /** The settings this publisher was built with. */
    public KafkaPublisherConfig config() {
        return config;
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        Objects.requireNonNull(events, "events");
        long start = System.nanoTime();
        long deadline = start + config.publishTimeout().toNanos();
        // A send may block up to max.block.ms, half the timeout: none starts after the first half.
        long lastSendStart = start + config.sendTimeout().toNanos();
        PublishResult[] results = new PublishResult[events.size()];
        List<Future<RecordMetadata>> acks = new ArrayList<>(events.size());
        String notSent = null;

        for (int i = 0; i < events.size(); i++) {
            acks.add(null);
            if (notSent == null && System.nanoTime() - lastSendStart >= 0) {
                notSent = "not sent: handing the batch to the Kafka producer took more than " + config.sendTimeout()
                        + " (waiting for metadata or buffer space; is the broker reachable?)";
            }
            if (notSent != null) {
                results[i] = PublishResult.retry(notSent);
                continue;
            }
            ProducerRecord<byte[], byte[]> record;
            try {
                record = records.record(events.get(i));
            } catch (IllegalArgumentException e) {
                results[i] = PublishResult.rejected(e.getMessage());
                continue;
            }
            try {
                acks.set(i, producer.send(record));
            } catch (RuntimeException e) {
                // The producer is closed or in a fatal state: no later send would fare better.
                results[i] = KafkaFailures.toResult(e);
                notSent = "not sent: the producer failed (" + e + ")";
            }
        }

        for (int i = 0; i < events.size(); i++) {
            if (results[i] == null) {
                results[i] = await(acks.get(i), deadline);
            }
        }
        if (log.isDebugEnabled()) {
            log.debug("published {} events to Kafka: {}", events.size(), Arrays.toString(results));
        }
        return List.of(results);
    }

    private PublishResult await(Future<RecordMetadata> ack, long deadline) {
        try {
            ack.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return PublishResult.published();
        } catch (ExecutionException e) {
            return KafkaFailures.toResult(e.getCause());
        } catch (TimeoutException e) {
            return PublishResult.retry("no acknowledgement from Kafka within " + config.publishTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return PublishResult.retry("interrupted while waiting for Kafka's acknowledgement");
        }
    }

    /** Closes the producer, giving records in flight up to the publish timeout to complete. */
    @Override
    public void close() {
        producer.close(config.publishTimeout());
    }
}

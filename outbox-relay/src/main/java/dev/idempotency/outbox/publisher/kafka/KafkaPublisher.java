package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
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
 *   <li>{@code traceparent} and {@code tracestate}: the writer's trace context, when the event has one
 *       ({@link OutboxEvent#traceHeaders()});</li>
 *   <li>the event's own headers, except any that reuse one of the names above.</li>
 * </ul>
 *
 * <p>A {@link #publish} hands the whole batch to the producer, has the producer send what it holds at once
 * (a {@code flush()} on a thread of the publisher's own, which the call itself never waits for: no
 * record of the batch waits out {@code linger.ms}, since nothing more comes until the batch is answered),
 * then waits for all acknowledgements together, each on its own send's future, and returns within
 * {@link KafkaPublisherConfig#publishTimeout()} of its start: events not
 * acknowledged by then are RETRY, so a broker outage costs one timeout per batch, not one per event.
 * Such timeouts, and a broker that refuses connections, are UNAVAILABLE when no broker answered the
 * producer anything during the call, or it has no connection to any broker at its end (the broker is
 * down, not the event's topic).
 *
 * <p>A producer that failed for good (closed, fenced, failed authentication, a broken idempotent
 * sequence) is replaced by a new one on the next batch; the batch that found it broken is
 * UNAVAILABLE. Safe for concurrent use by several threads.
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
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producers;
    /** Runs the producer's flush() after a batch was handed over. */
    private final ExecutorService flusher;
    /** Flushes asked for and not yet served; the flusher runs while there are any. */
    private final AtomicInteger flushRequests = new AtomicInteger();
    private Producer<byte[], byte[]> producer;
    private boolean producerBroken;
    private boolean closed;

    /** Creates the producer; it connects lazily, so an unreachable broker shows up as UNAVAILABLE results. */
    public KafkaPublisher(KafkaPublisherConfig config) {
        this(config, KafkaProducer::new);
    }

    /** With a producer factory of the test's choosing, called again when a producer breaks. */
    KafkaPublisher(KafkaPublisherConfig config, Function<Map<String, Object>, Producer<byte[], byte[]>> producers) {
        this.config = Objects.requireNonNull(config, "config");
        this.records = new OutboxRecords(config.topicPrefix());
        this.producers = producers;
        this.producer = producers.apply(config.producerSettings());
        this.flusher = Executors.newSingleThreadExecutor(task -> {
            Thread thread = new Thread(task, "kafka-publisher-flush");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** The settings this publisher was built with. */
    public KafkaPublisherConfig config() {
        return config;
    }

    /** The publish timeout: every call returns within it of its start. */
    /** {@code kafka}. */
    @Override
    public String messagingSystem() {
        return "kafka";
    }

    @Override
    public Optional<Duration> maxCallDuration() {
        return Optional.of(config.publishTimeout());
    }

    @Override
    public List<PublishResult> publish(List<OutboxEvent> events) {
        Objects.requireNonNull(events, "events");
        Producer<byte[], byte[]> producer = usableProducer();
        double responsesBefore = responsesReceived(producer);
        long start = System.nanoTime();
        long deadline = start + config.publishTimeout().toNanos();
        // A send may block up to max.block.ms, half the timeout: none starts after the first half.
        long lastSendStart = start + config.sendTimeout().toNanos();
        PublishResult[] results = new PublishResult[events.size()];
        // Failures that mean "no broker answered"; UNAVAILABLE if the producer reached no broker at all.
        boolean[] noAnswer = new boolean[events.size()];
        List<Future<RecordMetadata>> acks = new ArrayList<>(events.size());
        String notSent = null;
        boolean notSentIsBroken = false;

        for (int i = 0; i < events.size(); i++) {
            acks.add(null);
            if (notSent == null && System.nanoTime() - lastSendStart >= 0) {
                notSent = "not sent: handing the batch to the Kafka producer took more than " + config.sendTimeout()
                        + " (waiting for metadata or buffer space; is the broker reachable?)";
            }
            if (notSent != null) {
                results[i] = notSentIsBroken ? PublishResult.unavailable(notSent) : PublishResult.retry(notSent);
                noAnswer[i] = !notSentIsBroken;
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
                // The producer is closed or in a fatal state, or the metadata never came: no later send would fare better.
                notSentIsBroken = KafkaFailures.breaksTheProducer(e);
                if (notSentIsBroken) {
                    producerFailed(producer, e);
                    results[i] = PublishResult.unavailable(KafkaFailures.describe(e));
                } else {
                    results[i] = KafkaFailures.toResult(e);
                    noAnswer[i] = KafkaFailures.mayBeAnOutage(e);
                }
                notSent = "not sent: the producer failed (" + e + ")";
            }
        }

        sendNow();
        for (int i = 0; i < events.size(); i++) {
            if (results[i] == null) {
                results[i] = await(producer, acks.get(i), deadline, noAnswer, i);
            }
        }
        // Connected alone is no proof: the producer may be mid-reconnect to a broker that went away.
        if (anyTrue(noAnswer) && (responsesReceived(producer) == responsesBefore || !connectedToABroker(producer))) {
            for (int i = 0; i < results.length; i++) {
                if (noAnswer[i]) {
                    results[i] = PublishResult.unavailable(results[i].error() + " (no Kafka broker answered)");
                }
            }
        }
        if (log.isDebugEnabled()) {
            log.debug("published {} events to Kafka: {}", events.size(), Arrays.toString(results));
        }
        return List.of(results);
    }

    private PublishResult await(Producer<byte[], byte[]> producer, Future<RecordMetadata> ack, long deadline,
                                boolean[] noAnswer, int index) {
        try {
            ack.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return PublishResult.published();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (KafkaFailures.breaksTheProducer(cause)) {
                producerFailed(producer, cause);
                return PublishResult.unavailable(KafkaFailures.describe(cause));
            }
            noAnswer[index] = KafkaFailures.mayBeAnOutage(cause);
            return KafkaFailures.toResult(cause);
        } catch (TimeoutException e) {
            noAnswer[index] = true;
            return PublishResult.retry("no acknowledgement from Kafka within " + config.publishTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return PublishResult.retry("interrupted while waiting for Kafka's acknowledgement");
        }
    }

    /**
     * Has the producer send the records it holds now, without waiting for them: while its flush() runs,
     * every batch is sent as soon as the sender can, full or not. The call never waits for the flush
     * (which has no time limit of its own): its results come from each send's future, within its
     * deadline. A request made while a flush runs (a slow broker, or a flush about to return) is served
     * by one more flush after it; requests made meanwhile share that one.
     */
    private void sendNow() {
        if (flushRequests.getAndIncrement() > 0) {
            return;
        }
        try {
            flusher.execute(() -> {
                int served;
                do {
                    served = flushRequests.get();
                    try {
                        currentProducer().flush();
                    } catch (RuntimeException e) {
                        // Closed or interrupted producer: the sends' own futures tell each event's fate.
                        log.debug("flushing the Kafka producer failed", e);
                    }
                } while (flushRequests.addAndGet(-served) > 0);
            });
        } catch (RejectedExecutionException e) {
            flushRequests.set(0);
        }
    }

    private synchronized Producer<byte[], byte[]> currentProducer() {
        return producer;
    }

    /** Closes the producer, giving records in flight up to the publish timeout to complete. */
    @Override
    public void close() {
        Producer<byte[], byte[]> last;
        synchronized (this) {
            closed = true;
            last = producer;
        }
        try {
            last.close(config.publishTimeout());
        } finally {
            flusher.shutdownNow();
        }
    }

    /** The current producer, or a new one in place of one that failed for good. */
    private synchronized Producer<byte[], byte[]> usableProducer() {
        if (producerBroken && !closed) {
            Producer<byte[], byte[]> broken = producer;
            producer = producers.apply(config.producerSettings());
            producerBroken = false;
            log.info("created a new Kafka producer in place of the one that failed");
            try {
                broken.close(Duration.ZERO);
            } catch (RuntimeException e) {
                log.debug("closing the failed Kafka producer failed", e);
            }
        }
        return producer;
    }

    private synchronized void producerFailed(Producer<byte[], byte[]> failed, Throwable failure) {
        if (failed == producer && !producerBroken) {
            producerBroken = true;
            log.warn("the Kafka producer failed for good ({}); the next batch uses a new one", failure.toString());
        }
    }

    /** Whether the producer holds a connection to at least one broker (its connection-count metric). */
    private static boolean connectedToABroker(Producer<byte[], byte[]> producer) {
        return producerMetric(producer, "connection-count") > 0;
    }

    /** How many responses from any broker the producer has received so far (its response-total metric). */
    private static double responsesReceived(Producer<byte[], byte[]> producer) {
        return producerMetric(producer, "response-total");
    }

    /** The producer-wide metric {@code name} (group producer-metrics), summed; 0 when the producer has none. */
    private static double producerMetric(Producer<byte[], byte[]> producer, String name) {
        return producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics"))
                .mapToDouble(e -> e.getValue().metricValue() instanceof Number n ? n.doubleValue() : 0)
                .sum();
    }

    private static boolean anyTrue(boolean[] values) {
        for (boolean value : values) {
            if (value) {
                return true;
            }
        }
        return false;
    }
}

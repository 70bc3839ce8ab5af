package dev.idempotency.outbox.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch consumer on RabbitMQ's batch API, as an application would write it: a prefetch of 100
 * unacknowledged deliveries, gathered into a batch, applied by {@link IdempotentBatchConsumer} in
 * one transaction, then acknowledged with one {@code basicAck(lastTag, multiple=true)} when every
 * result acknowledges (each on its own otherwise). Some messages are published twice (copies a relay
 * sends after a crash), and the first batch is nack'ed after its commit, as a crash before the ack
 * would leave it: each message is applied once all the same.
 */
@Timeout(120)
class BatchConsumerRabbitMqExampleTest {
    private static final int MESSAGES = 250;
    private static final int COPIES = 30;
    private static final int PREFETCH = 100;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @Test
    void prefetchedBatchesAreAppliedOnceEachAndAcknowledgedTogetherOnlyAfterTheirCommit() throws Exception {
        String queue = "batch-example-" + UUID.randomUUID();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(Brokers.RABBITMQ_PORT);
        try (TestSchema schema = TestDatabase.get().newSchema("rmqbatch", 4);
             Connection rabbit = factory.newConnection("batch-consumer-example");
             Channel channel = rabbit.createChannel()) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("CREATE TABLE shipments (message_id text NOT NULL)");
            channel.queueDeclare(queue, false, false, true, null);
            for (int m = 0; m < MESSAGES; m++) {
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(UUID.randomUUID().toString())
                        .headers(Map.of(OutboxHeaders.TENANT, "t1")).build();
                byte[] body = ("order " + m).getBytes(StandardCharsets.UTF_8);
                channel.basicPublish("", queue, properties, body);
                if (m < COPIES) {
                    channel.basicPublish("", queue, properties, body); // a copy, next to it: in the same batch
                }
            }

            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                    .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
            IdempotentBatchConsumer shipping = IdempotentBatchConsumer.builder(executor, "shipping").build();
            BlockingQueue<Delivery> delivered = new LinkedBlockingQueue<>();
            channel.basicQos(PREFETCH);
            channel.basicConsume(queue, false, (tag, delivery) -> delivered.add(delivery), tag -> { });

            AtomicInteger runs = new AtomicInteger();
            AtomicInteger duplicates = new AtomicInteger();
            Set<String> acknowledged = new HashSet<>();
            boolean crashed = false;
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (acknowledged.size() < MESSAGES && System.nanoTime() < deadline) {
                List<Delivery> batch = nextBatch(delivered);
                if (batch.isEmpty()) {
                    continue;
                }
                List<IdempotentBatchConsumer.Result<Delivery>> results = shipping.consume(batch,
                        delivery -> delivery.getProperties().getMessageId(),
                        delivery -> String.valueOf(delivery.getProperties().getHeaders().get(OutboxHeaders.TENANT)),
                        (tx, delivery) -> {
                            runs.incrementAndGet();
                            tx.handle().execute("INSERT INTO shipments (message_id) VALUES (?)",
                                    delivery.getProperties().getMessageId());
                        });
                // consume() has committed: from here on, acknowledging loses nothing.
                long lastTag = batch.get(batch.size() - 1).getEnvelope().getDeliveryTag();
                if (!crashed) {
                    crashed = true;
                    channel.basicNack(lastTag, true, true); // a crash between the commit and the ack: all requeued
                    continue;
                }
                if (results.stream().allMatch(result -> result.delivery().acknowledge())) {
                    channel.basicAck(lastTag, true); // the whole batch in one frame
                } else {
                    for (IdempotentBatchConsumer.Result<Delivery> result : results) {
                        long tag = result.message().getEnvelope().getDeliveryTag();
                        if (result.delivery().acknowledge()) {
                            channel.basicAck(tag, false);
                        } else {
                            channel.basicNack(tag, false, result.delivery().retryLater()); // else dead-letter it
                        }
                    }
                }
                for (IdempotentBatchConsumer.Result<Delivery> result : results) {
                    if (result.delivery().acknowledge()) {
                        acknowledged.add(result.message().getProperties().getMessageId());
                    }
                    if (result.delivery().outcome() == dev.idempotency.core.consumer.Delivery.Outcome.DUPLICATE) {
                        duplicates.incrementAndGet();
                    }
                }
            }

            Jdbi jdbi = Jdbi.create(schema.dataSource());
            assertEquals(MESSAGES, acknowledged.size());
            assertEquals(MESSAGES, count(jdbi, "SELECT count(*) FROM shipments"), "one shipment per message");
            assertEquals(MESSAGES, count(jdbi, "SELECT count(DISTINCT message_id) FROM shipments"));
            assertEquals(MESSAGES, runs.get(), "each handler ran once, copies and redeliveries included");
            assertTrue(duplicates.get() >= COPIES, "copies and the redelivered batch were replays: " + duplicates.get());
        }
    }

    /** Up to a prefetch of deliveries: waits for the first, then takes what arrives within a few milliseconds. */
    private static List<Delivery> nextBatch(BlockingQueue<Delivery> delivered) throws InterruptedException {
        List<Delivery> batch = new ArrayList<>(PREFETCH);
        Delivery first = delivered.poll(500, TimeUnit.MILLISECONDS);
        if (first == null) {
            return batch;
        }
        batch.add(first);
        while (batch.size() < PREFETCH) {
            Delivery next = delivered.poll(20, TimeUnit.MILLISECONDS);
            if (next == null) {
                break;
            }
            batch.add(next);
        }
        return batch;
    }

    private static long count(Jdbi jdbi, String sql) {
        return jdbi.withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

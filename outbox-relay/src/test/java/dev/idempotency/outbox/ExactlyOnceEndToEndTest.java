package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole promise, end to end against PostgreSQL and RabbitMQ: duplicate requests run once and
 * write one outbox event each; the relay publishes every event; the broker redelivers and the
 * "relay" republishes copies; a consumer using {@link IdempotentConsumer} applies each event once.
 */
@Timeout(120)
class ExactlyOnceEndToEndTest {
    private static final int ORDERS = 100;
    private static final int COPIES_PER_REQUEST = 3;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @Test
    void everyOrderIsShippedExactlyOnceThroughDuplicateRequestsRedeliveriesAndRepublishedCopies() throws Exception {
        String queue = "e2e-orders-" + UUID.randomUUID();
        try (TestSchema schema = TestDatabase.get().newSchema("e2e", 12);
             Connection rabbit = rabbitConnection();
             Channel setup = rabbit.createChannel();
             RabbitMqPublisher publisher = new RabbitMqPublisher(RabbitMqPublisherConfig.builder()
                     .host("127.0.0.1").build())) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("CREATE TABLE orders (order_key text PRIMARY KEY); "
                    + "CREATE TABLE shipments (message_id text NOT NULL, order_key text NOT NULL)");
            setup.queueDeclare(queue, false, false, true, null);
            Jdbi jdbi = Jdbi.create(schema.dataSource());
            IdempotencyConfig config = IdempotencyConfig.builder()
                    .schema(schema.name()).waitBudget(Duration.ofSeconds(30)).build();

            OutboxRelay relay = OutboxRelay.builder(schema.dataSource(), publisher).config(OutboxRelayConfig.builder()
                    .schema(schema.name()).partitions(4).idlePollMax(Duration.ofMillis(100)).build()).build();
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                    .config(config).afterOutboxCommit(relay::wakeUp).build();

            // The consumer side: its own executor on the same database, as a separate service would have.
            IdempotentConsumer<PostgresTransaction> shipping = IdempotentConsumer.builder(
                    PostgresIdempotentExecutor.builder(schema.dataSource()).config(config).build(), "shipping").build();
            Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
            Map<dev.idempotency.core.consumer.Delivery.Outcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
            Set<String> acked = ConcurrentHashMap.newKeySet();
            AtomicInteger injected = new AtomicInteger();
            Channel consumerChannel = rabbit.createChannel();
            consumerChannel.basicQos(16);
            consumerChannel.basicConsume(queue, false, (tag, delivery) -> {
                String messageId = delivery.getProperties().getMessageId();
                String tenant = String.valueOf(delivery.getProperties().getHeaders().get(OutboxHeaders.TENANT));
                String orderKey = String.valueOf(delivery.getProperties().getHeaders().get(OutboxHeaders.PARTITION_KEY));
                int seen = deliveries.computeIfAbsent(messageId, id -> new AtomicInteger()).incrementAndGet();
                var result = shipping.consume(messageId, tenant, tx -> tx.handle()
                        .createUpdate("INSERT INTO shipments (message_id, order_key) VALUES (:m, :o)")
                        .bind("m", messageId).bind("o", orderKey).execute());
                outcomes.computeIfAbsent(result.outcome(), o -> new AtomicInteger()).incrementAndGet();
                // Message ids are UUIDs: pick about a third and a fifth of the messages by their hash.
                int pick = Math.floorMod(messageId.hashCode(), 15);
                if (seen == 1 && pick % 3 == 0) {
                    // Crash after applying, before acking: the broker redelivers.
                    injected.incrementAndGet();
                    consumerChannel.basicNack(delivery.getEnvelope().getDeliveryTag(), false, true);
                    return;
                }
                if (seen == 1 && pick % 5 == 0) {
                    // A copy with the same message id, as a relay that crashed before marking would send.
                    injected.incrementAndGet();
                    republish(consumerChannel, queue, delivery);
                }
                if (result.acknowledge()) {
                    acked.add(messageId);
                    consumerChannel.basicAck(delivery.getEnvelope().getDeliveryTag(), false);
                } else {
                    consumerChannel.basicNack(delivery.getEnvelope().getDeliveryTag(), false, true);
                }
            }, tag -> { });

            relay.start();
            try {
                placeOrdersWithDuplicateRequests(executor, queue);
                awaitAllAcked(acked, deliveries, injected);
            } finally {
                relay.stop();
            }

            long events = count(jdbi, "SELECT count(*) FROM outbox_events");
            long published = count(jdbi, "SELECT count(*) FROM outbox_event_states WHERE status = 'published'");
            long shipments = count(jdbi, "SELECT count(*) FROM shipments");
            long distinctShipped = count(jdbi, "SELECT count(DISTINCT order_key) FROM shipments");
            long totalDeliveries = deliveries.values().stream().mapToInt(AtomicInteger::get).sum();
            assertEquals(ORDERS, count(jdbi, "SELECT count(*) FROM orders"), "orders placed once each");
            assertEquals(ORDERS, events, "one outbox event per order");
            assertEquals(ORDERS, published, "every event marked published");
            assertEquals(ORDERS, shipments, "one shipment per order, despite " + injected.get() + " injected duplicates");
            assertEquals(ORDERS, distinctShipped);
            assertTrue(injected.get() > 0 && totalDeliveries >= ORDERS + injected.get(), "duplicates were delivered");
            assertEquals(ORDERS, outcomes.get(dev.idempotency.core.consumer.Delivery.Outcome.APPLIED).get());
        }
    }

    private static void placeOrdersWithDuplicateRequests(PostgresIdempotentExecutor executor, String queue) throws Exception {
        ExecutorService callers = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int copy = 0; copy < COPIES_PER_REQUEST; copy++) {
                for (int order = 0; order < ORDERS; order++) {
                    String orderKey = "order-" + order;
                    calls.add(callers.submit(() -> executor.run("checkout-" + orderKey, "shop-1", String.class, tx -> {
                        tx.handle().createUpdate("INSERT INTO orders (order_key) VALUES (:o)").bind("o", orderKey).execute();
                        tx.outbox().publish(queue, orderKey, Map.of("order", orderKey));
                        return orderKey;
                    })));
                }
            }
            for (Future<?> call : calls) {
                call.get(60, TimeUnit.SECONDS);
            }
        } finally {
            callers.shutdownNow();
        }
    }

    private static void awaitAllAcked(Set<String> acked, Map<String, AtomicInteger> deliveries, AtomicInteger injected) {
        Await.until("every one of " + ORDERS + " orders acknowledged", Duration.ofSeconds(90), () -> acked.size() == ORDERS
                && deliveries.values().stream().mapToInt(AtomicInteger::get).sum() >= ORDERS + injected.get());
    }

    private static void republish(Channel channel, String queue, Delivery delivery) throws java.io.IOException {
        AMQP.BasicProperties copy = delivery.getProperties().builder().build();
        channel.basicPublish("", queue, copy, delivery.getBody());
    }

    private static Connection rabbitConnection() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        return factory.newConnection("e2e-consumer");
    }

    private static long count(Jdbi jdbi, String sql) {
        return jdbi.withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

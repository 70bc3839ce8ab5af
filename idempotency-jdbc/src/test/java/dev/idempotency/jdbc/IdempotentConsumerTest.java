package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class IdempotentConsumerTest {
    private static ExecutorFixture db;
    private static IdempotentConsumer<PostgresTransaction> consumer;

    @BeforeAll
    static void setUp() {
        db = new ExecutorFixture("consumer", 10);
        db.schema.execute("CREATE TABLE shipments (message_id text NOT NULL, consumer text NOT NULL)");
        consumer = IdempotentConsumer.create(db.executor(c -> c.waitBudget(Duration.ofMillis(300))), "shipping");
    }

    @AfterAll
    static void tearDown() {
        db.close();
    }

    private static void ship(PostgresTransaction tx, String messageId, String consumerName) {
        tx.handle().createUpdate("INSERT INTO shipments (message_id, consumer) VALUES (:m, :c)")
                .bind("m", messageId).bind("c", consumerName).execute();
    }

    private static long shipments(String messageId) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM shipments WHERE message_id = :m")
                .bind("m", messageId).mapTo(Long.class).one());
    }

    @Test
    void redeliveriesRacingEachOtherApplyEachMessageOnceAndAreAllAcknowledged() throws Exception {
        String batch = UUID.randomUUID().toString().substring(0, 8);
        List<String> deliveries = new ArrayList<>();
        for (int m = 0; m < 50; m++) {
            for (int copy = 0; copy < 3; copy++) {
                deliveries.add(batch + "-" + m);
            }
        }
        Collections.shuffle(deliveries);
        PostgresIdempotentExecutor patient = db.executor(c -> c.waitBudget(Duration.ofSeconds(30)));
        IdempotentConsumer<PostgresTransaction> racing = IdempotentConsumer.create(patient, "shipping");
        Map<Delivery.Outcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (String messageId : deliveries) {
                futures.add(threads.submit(() -> {
                    Delivery delivery = racing.consume(messageId, "t1", tx -> ship(tx, messageId, "shipping"));
                    assertTrue(delivery.acknowledge(), delivery.toString());
                    outcomes.computeIfAbsent(delivery.outcome(), o -> new AtomicInteger()).incrementAndGet();
                }));
            }
            for (Future<?> future : futures) {
                future.get(50, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }

        assertEquals(50, outcomes.get(Delivery.Outcome.APPLIED).get());
        assertEquals(100, outcomes.get(Delivery.Outcome.DUPLICATE).get());
        for (int m = 0; m < 50; m++) {
            assertEquals(1, shipments(batch + "-" + m));
        }
    }

    @Test
    void aHandlerThatFailsTransientlyCommitsNothingAndTheRedeliveryAppliesIt() {
        String messageId = UUID.randomUUID().toString();

        Delivery first = consumer.consume(messageId, "t1", tx -> {
            ship(tx, messageId, "shipping");
            throw new IllegalStateException("warehouse API timed out");
        });
        Delivery redelivery = consumer.consume(messageId, "t1", tx -> ship(tx, messageId, "shipping"));

        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, first.outcome());
        assertTrue(first.retryLater());
        assertEquals("warehouse API timed out", first.error().getMessage());
        assertEquals(Delivery.Outcome.APPLIED, redelivery.outcome());
        assertEquals(1, shipments(messageId));
    }

    @Test
    void aMessageTheHandlerDeclaresInapplicableIsAcknowledgedAndNotRetried() {
        String messageId = UUID.randomUUID().toString();
        AtomicInteger runs = new AtomicInteger();

        Delivery first = consumer.consume(messageId, "t1", tx -> {
            runs.incrementAndGet();
            throw new BusinessFailure("unknown_order", "No such order");
        });
        Delivery redelivery = consumer.consume(messageId, "t1", tx -> runs.incrementAndGet());

        assertEquals(Delivery.Outcome.FAILED_PERMANENTLY, first.outcome());
        assertTrue(first.acknowledge());
        assertEquals(Delivery.Outcome.FAILED_PERMANENTLY, redelivery.outcome());
        assertEquals(1, runs.get());
    }

    @Test
    void aRedeliveryWhileAnotherConsumerInstanceIsApplyingItIsLeftForLater() throws Exception {
        String messageId = UUID.randomUUID().toString();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try {
            Future<Delivery> first = thread.submit(() -> consumer.consume(messageId, "t1", tx -> {
                inside.countDown();
                release.await();
                ship(tx, messageId, "shipping");
            }));
            assertTrue(inside.await(30, TimeUnit.SECONDS));

            Delivery concurrent = consumer.consume(messageId, "t1", tx -> ship(tx, messageId, "shipping"));

            release.countDown();
            assertEquals(Delivery.Outcome.IN_PROGRESS, concurrent.outcome());
            assertTrue(concurrent.retryLater());
            assertEquals(Delivery.Outcome.APPLIED, first.get(30, TimeUnit.SECONDS).outcome());
            assertEquals(1, shipments(messageId));
        } finally {
            thread.shutdownNow();
        }
    }

    @Test
    void twoConsumersOfOneMessageEachApplyItOnce() {
        String messageId = UUID.randomUUID().toString();
        IdempotentConsumer<PostgresTransaction> billing = IdempotentConsumer.create(db.executor(), "billing");

        assertEquals(Delivery.Outcome.APPLIED, consumer.consume(messageId, "t1", tx -> ship(tx, messageId, "shipping")).outcome());
        assertEquals(Delivery.Outcome.APPLIED, billing.consume(messageId, "t1", tx -> ship(tx, messageId, "billing")).outcome());
        assertEquals(Delivery.Outcome.DUPLICATE, billing.consume(messageId, "t1", tx -> ship(tx, messageId, "billing")).outcome());

        assertEquals(2, shipments(messageId));
    }

    @Test
    void aMalformedMessageIdIsRejectedWithoutRunningTheHandler() {
        AtomicInteger runs = new AtomicInteger();

        Delivery blank = consumer.consume(" ", "t1", tx -> runs.incrementAndGet());
        Delivery control = consumer.consume("id\u0000", "t1", tx -> runs.incrementAndGet());
        Delivery noTenant = consumer.consume("42", null, tx -> runs.incrementAndGet());

        for (Delivery delivery : List.of(blank, control, noTenant)) {
            assertEquals(Delivery.Outcome.INVALID, delivery.outcome());
            assertFalse(delivery.acknowledge());
            assertFalse(delivery.retryLater());
        }
        assertEquals(0, runs.get());
    }
}

package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
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
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

@Timeout(60)
class IdempotentConsumerTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(10);
    private static IdempotentConsumer<PostgresTransaction> consumer;

    @BeforeAll
    static void setUp() {
        db.schema.execute("CREATE TABLE shipments (message_id text NOT NULL, consumer text NOT NULL)");
        consumer = IdempotentConsumer.builder(db.executor(c -> c.waitBudget(Duration.ofMillis(300))), "shipping").build();
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
        IdempotentConsumer<PostgresTransaction> racing = IdempotentConsumer.builder(patient, "shipping").build();
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
        IdempotentConsumer<PostgresTransaction> billing = IdempotentConsumer.builder(db.executor(), "billing").build();

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
        Delivery invisible = consumer.consume("42\u200B", "t1", tx -> runs.incrementAndGet());

        for (Delivery delivery : List.of(blank, control, noTenant, invisible)) {
            assertEquals(Delivery.Outcome.INVALID, delivery.outcome());
            assertFalse(delivery.acknowledge());
            assertFalse(delivery.retryLater());
        }
        assertEquals(0, runs.get());
    }

    @Test
    void aHandlerThatKeepsFailingIsDeadLetteredOnItsMaxAttemptsThFailureAndTheOperatorIsWarnedWithoutThePayload() {
        String messageId = UUID.randomUUID().toString();
        String payload = "PAYLOAD-" + UUID.randomUUID();
        IdempotentConsumer<PostgresTransaction> failing = IdempotentConsumer.builder(db.executor(), "failing-projector")
                .maxAttempts(3).build();
        Logger logger = (Logger) LoggerFactory.getLogger(IdempotentConsumer.class);
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        logger.addAppender(captured);
        List<Delivery> deliveries = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                deliveries.add(failing.consume(messageId, "t1", tx -> {
                    ship(tx, messageId, "failing-projector");
                    throw new IllegalStateException("cannot parse " + payload);
                }));
            }
        } finally {
            logger.detachAppender(captured);
        }

        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, deliveries.get(0).outcome());
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, deliveries.get(1).outcome());
        Delivery last = deliveries.get(2);
        assertEquals(Delivery.Outcome.DEAD_LETTER, last.outcome());
        assertFalse(last.acknowledge());
        assertFalse(last.retryLater());
        assertEquals("cannot parse " + payload, last.error().getMessage());
        assertEquals(0, shipments(messageId));
        List<ILoggingEvent> warnings = captured.list.stream().filter(e -> e.getLevel() == Level.WARN).toList();
        assertEquals(1, warnings.size(), "one warning, for the dead letter");
        String warning = warnings.get(0).getFormattedMessage();
        assertTrue(warning.contains("failing-projector") && warning.contains(messageId), warning);
        assertFalse(warning.contains(payload), warning);
        assertEquals(null, warnings.get(0).getThrowableProxy(), "no exception text, which may quote the payload");
    }

    @Test
    void failedAttemptsAreCountedInTheDatabaseAcrossConsumerInstances() {
        String messageId = UUID.randomUUID().toString();
        List<IdempotentConsumer<PostgresTransaction>> instances = List.of(
                IdempotentConsumer.builder(db.executor(), "inventory").build(),
                IdempotentConsumer.builder(db.executor(), "inventory").build());
        assertEquals(IdempotentConsumer.DEFAULT_MAX_ATTEMPTS, instances.get(0).maxAttempts());

        List<Delivery.Outcome> outcomes = new ArrayList<>();
        for (int i = 0; i < IdempotentConsumer.DEFAULT_MAX_ATTEMPTS; i++) {
            // Redeliveries land on alternating instances, as a broker spreads them.
            outcomes.add(instances.get(i % 2).consume(messageId, "t1", tx -> {
                throw new IllegalStateException("projection bug");
            }).outcome());
        }

        assertEquals(List.of(Delivery.Outcome.TRANSIENT_FAILURE, Delivery.Outcome.TRANSIENT_FAILURE,
                Delivery.Outcome.TRANSIENT_FAILURE, Delivery.Outcome.TRANSIENT_FAILURE, Delivery.Outcome.DEAD_LETTER), outcomes);
        // Another tenant's message with the same id has its own count.
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, instances.get(0).consume(messageId, "t2", tx -> {
            throw new IllegalStateException("projection bug");
        }).outcome());
    }

    @Test
    void failuresTheDatabaseCallsTransientAreNotCountedAgainstTheMessage() {
        String messageId = UUID.randomUUID().toString();
        IdempotentConsumer<PostgresTransaction> strict = IdempotentConsumer.builder(db.executor(), "conflicting").maxAttempts(2).build();

        for (int i = 0; i < 4; i++) {
            Delivery delivery = strict.consume(messageId, "t1", tx -> tx.handle().execute(
                    "DO $$ BEGIN RAISE EXCEPTION 'write conflict' USING ERRCODE = '40001'; END $$"));
            assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, delivery.outcome(), delivery.toString());
        }

        assertEquals(Delivery.Outcome.APPLIED,
                strict.consume(messageId, "t1", tx -> ship(tx, messageId, "conflicting")).outcome());
    }

    @Test
    void aDeadLetteredMessageReDrivenAfterAFixIsAppliedAndAFailingOneGoesStraightBack() {
        String fixed = UUID.randomUUID().toString();
        String stillBroken = UUID.randomUUID().toString();
        IdempotentConsumer<PostgresTransaction> once = IdempotentConsumer.builder(db.executor(), "redrive").maxAttempts(1).build();

        for (String messageId : List.of(fixed, stillBroken)) {
            assertEquals(Delivery.Outcome.DEAD_LETTER, once.consume(messageId, "t1", tx -> {
                throw new IllegalStateException("bug");
            }).outcome());
        }

        assertEquals(Delivery.Outcome.APPLIED, once.consume(fixed, "t1", tx -> ship(tx, fixed, "redrive")).outcome());
        assertEquals(1, shipments(fixed));
        assertEquals(Delivery.Outcome.DEAD_LETTER, once.consume(stillBroken, "t1", tx -> {
            throw new IllegalStateException("bug");
        }).outcome());
    }

    @Test
    void aConsumerNameHoldingTheKeySeparatorIsRefusedSinceItsKeysWouldCollideWithAnotherConsumers() {
        // "orders" consuming message "audit:7" and "orders:audit" consuming message "7" would both use key "orders:audit:7".
        for (String name : List.of("orders:audit", "orders#audit", "a b", "caf\u00e9", "billing\u200B")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> IdempotentConsumer.builder(db.executor(), name).build(), name);
            assertTrue(e.getMessage().startsWith("name "), e.getMessage());
        }
        IllegalArgumentException attempts = assertThrows(IllegalArgumentException.class,
                () -> IdempotentConsumer.builder(db.executor(), "billing").maxAttempts(0).build());
        assertTrue(attempts.getMessage().startsWith("maxAttempts "), attempts.getMessage());
        assertNotEquals(null, IdempotentConsumer.builder(db.executor(), "Billing_v2.projector-1").build());
    }
}

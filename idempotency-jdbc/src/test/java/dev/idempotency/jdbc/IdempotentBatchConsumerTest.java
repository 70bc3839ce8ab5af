package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import java.time.Duration;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class IdempotentBatchConsumerTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    /** A schema before V11, whose batches claim their keys processing and complete them. */
    @RegisterExtension
    static final ExecutorFixture beforeV11 = new ExecutorFixture(2, "10");
    private static PostgresIdempotentExecutor executor;

    /** A broker's message: the id the relay sent, the tenant, a payload. */
    record Message(String id, String tenant, String payload) {
    }

    @BeforeAll
    static void setUp() {
        db.schema.execute("CREATE TABLE shipments (message_id text NOT NULL, payload text NOT NULL)");
        beforeV11.schema.execute("CREATE TABLE shipments (message_id text NOT NULL, payload text NOT NULL)");
        executor = db.executor();
    }

    private static IdempotentBatchConsumer consumer(String name, int maxAttempts) {
        return IdempotentBatchConsumer.builder(executor, name).maxAttempts(maxAttempts).build();
    }

    private static List<IdempotentBatchConsumer.Result<Message>> consume(IdempotentBatchConsumer consumer, List<Message> batch,
                                                                         IdempotentBatchConsumer.Handler<Message> handler) {
        return consumer.consume(batch, Message::id, Message::tenant, handler);
    }

    /** The business write: one shipment per message. */
    private static void ship(PostgresTransaction tx, Message message) {
        tx.handle().createUpdate("INSERT INTO shipments (message_id, payload) VALUES (:m, :p)")
                .bind("m", message.id()).bind("p", message.payload()).execute();
    }

    /** Ten messages, of which three make their handler fail, each its own way. */
    private record BadOnes(String prefix, List<Message> batch, String failing, String poison, String refused) {
        static BadOnes amongTen() {
            String prefix = UUID.randomUUID().toString().substring(0, 8);
            List<Message> batch = messages(prefix, 10);
            return new BadOnes(prefix, batch, batch.get(2).id(), batch.get(5).id(), batch.get(7).id());
        }

        /**
         * Fails as a bad one of {@code ids} makes its handler fail: {@code failing} throws, {@code poison}
         * runs a statement that aborts the transaction (until its savepoint is rolled back to),
         * {@code refused} is a business failure.
         */
        void failIfAmong(PostgresTransaction tx, List<String> ids) {
            if (ids.contains(failing)) {
                throw new IllegalStateException("downstream lookup failed");
            }
            if (ids.contains(poison)) {
                tx.handle().execute("INSERT INTO no_such_table VALUES (1)");
            }
            if (ids.contains(refused)) {
                throw new BusinessFailure("unknown_customer", "no such customer");
            }
        }
    }

    private static long shipments(String messageId) {
        return shipments(db, messageId);
    }

    private static long shipments(ExecutorFixture fixture, String messageId) {
        return fixture.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM shipments WHERE message_id = :m")
                .bind("m", messageId).mapTo(Long.class).one());
    }

    private static long keyRowsOf(String consumerName, String prefix) {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM idempotency_keys WHERE idempotency_key LIKE :k")
                .bind("k", consumerName + ":" + prefix + "%").mapTo(Long.class).one());
    }

    private static List<Message> messages(String prefix, int count) {
        List<Message> messages = new ArrayList<>();
        for (int m = 0; m < count; m++) {
            messages.add(new Message(prefix + "-" + m, "t1", "payload " + m));
        }
        return messages;
    }

    private static Map<Delivery.Outcome, Integer> outcomes(List<IdempotentBatchConsumer.Result<Message>> results) {
        Map<Delivery.Outcome, Integer> outcomes = new EnumMap<>(Delivery.Outcome.class);
        results.forEach(result -> outcomes.merge(result.delivery().outcome(), 1, Integer::sum));
        return outcomes;
    }

    private static Delivery.Outcome outcomeOf(List<IdempotentBatchConsumer.Result<Message>> results, String id) {
        return results.stream().filter(result -> result.message().id().equals(id)).findFirst().orElseThrow()
                .delivery().outcome();
    }

    @Test
    void aBatchOf100WithDuplicatesInsideAppliesEachMessageOnceAndItsRedeliveryRunsNothing() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> distinct = messages(prefix, 80);
        List<Message> batch = new ArrayList<>(distinct);
        batch.addAll(distinct.subList(0, 20)); // the broker delivered 20 of them twice in one batch
        Collections.shuffle(batch, new Random(38));
        IdempotentBatchConsumer consumer = consumer("shipping", 5);
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        IdempotentBatchConsumer.Handler<Message> handler = (tx, message) -> {
            runs.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
            ship(tx, message);
        };

        List<IdempotentBatchConsumer.Result<Message>> first = consume(consumer, batch, handler);

        assertEquals(100, first.size());
        for (int i = 0; i < batch.size(); i++) {
            assertEquals(batch.get(i), first.get(i).message(), "results come in the batch's order");
            assertTrue(first.get(i).delivery().acknowledge(), first.get(i).toString());
        }
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 80, Delivery.Outcome.DUPLICATE, 20), outcomes(first));
        assertEquals(80, runs.size());
        for (Message message : distinct) {
            assertEquals(1, runs.get(message.id()).get(), message.id());
            assertEquals(1, shipments(message.id()), message.id());
        }
        assertEquals(80, keyRowsOf("shipping", prefix));

        List<Message> redelivered = new ArrayList<>(batch);
        Collections.shuffle(redelivered, new Random(39));
        List<IdempotentBatchConsumer.Result<Message>> replay = consume(consumer, redelivered, handler);

        assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 100), outcomes(replay));
        assertTrue(replay.stream().allMatch(result -> result.delivery().acknowledge()));
        for (Message message : distinct) {
            assertEquals(1, runs.get(message.id()).get(), message.id());
            assertEquals(1, shipments(message.id()), message.id());
        }
        // The one-message consumer of the same name shares the keys: a message the batch applied is a replay there.
        Delivery single = IdempotentConsumer.builder(executor, "shipping").build()
                .consume(distinct.get(0).id(), "t1", tx -> ship(tx, distinct.get(0)));
        assertEquals(Delivery.Outcome.DUPLICATE, single.outcome());
        assertEquals(1, shipments(distinct.get(0).id()));
    }

    @Test
    void aFailingAPoisonAndABusinessFailureAmongGoodMessagesUndoOnlyTheirOwnWrites() {
        BadOnes bad = BadOnes.amongTen();
        List<Message> batch = bad.batch();
        String failing = bad.failing();
        String poison = bad.poison();
        String refused = bad.refused();
        IdempotentBatchConsumer consumer = consumer("billing", 2);
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        IdempotentBatchConsumer.Handler<Message> handler = (tx, message) -> {
            runs.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
            ship(tx, message); // each bad one writes first: its write must be undone
            bad.failIfAmong(tx, List.of(message.id()));
        };

        List<IdempotentBatchConsumer.Result<Message>> first = consume(consumer, batch, handler);

        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, outcomeOf(first, failing));
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, outcomeOf(first, poison));
        assertEquals(Delivery.Outcome.FAILED_PERMANENTLY, outcomeOf(first, refused));
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 7, Delivery.Outcome.TRANSIENT_FAILURE, 2,
                Delivery.Outcome.FAILED_PERMANENTLY, 1), outcomes(first));
        for (Message message : batch) {
            boolean good = !List.of(failing, poison, refused).contains(message.id());
            assertEquals(good ? 1 : 0, shipments(message.id()), message.id());
        }
        assertEquals(8, keyRowsOf("billing", bad.prefix()), "the good ones' keys and the stored business failure");
        assertEquals("failed", db.keyRow("billing:" + refused, "t1").get("status"));

        List<IdempotentBatchConsumer.Result<Message>> second = consume(consumer, batch, handler);

        // The second failed attempt is the consumer's maxAttempts-th: dead-letter both, run the others no more.
        assertEquals(Delivery.Outcome.DEAD_LETTER, outcomeOf(second, failing));
        assertEquals(Delivery.Outcome.DEAD_LETTER, outcomeOf(second, poison));
        assertInstanceOf(IllegalStateException.class, second.stream()
                .filter(result -> result.message().id().equals(failing)).findFirst().orElseThrow().delivery().error());
        assertEquals(Delivery.Outcome.FAILED_PERMANENTLY, outcomeOf(second, refused));
        assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 7, Delivery.Outcome.DEAD_LETTER, 2,
                Delivery.Outcome.FAILED_PERMANENTLY, 1), outcomes(second));
        for (int m = 0; m < batch.size(); m++) {
            Message message = batch.get(m);
            boolean retried = message.id().equals(failing) || message.id().equals(poison);
            // The two ahead of the first failure ran in the rolled-back transaction, then again with savepoints;
            // a failed message runs once per delivery.
            assertEquals(retried || m < 2 ? 2 : 1, runs.get(message.id()).get(), message.id());
            boolean good = !retried && !message.id().equals(refused);
            assertEquals(good ? 1 : 0, shipments(message.id()), message.id());
        }
    }

    @Test
    void aConnectionKilledBeforeTheCommitLeavesNothingAndTheRedeliveryRunsEveryMessage() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 20);
        String last = batch.get(19).id();
        IdempotentBatchConsumer consumer = consumer("crashing", 5);

        List<IdempotentBatchConsumer.Result<Message>> crashed = consume(consumer, batch, (tx, message) -> {
            ship(tx, message);
            if (message.id().equals(last)) {
                // The process dies, or the database drops it, after every handler ran and before the commit.
                tx.handle().createQuery("SELECT pg_terminate_backend(pg_backend_pid())").mapTo(Boolean.class).one();
            }
        });

        assertEquals(Map.of(Delivery.Outcome.TRANSIENT_FAILURE, 20), outcomes(crashed));
        assertTrue(crashed.stream().allMatch(result -> result.delivery().retryLater()), "nothing may be acknowledged");
        assertRedeliveryRunsEveryMessageOnce(consumer, batch, prefix, "crashing");
    }

    /** The top-level transaction's id, the same in every savepoint of one transaction. */
    private static long transactionId(PostgresTransaction tx) {
        return tx.handle().createQuery("SELECT txid_current()").mapTo(Long.class).one();
    }

    @Test
    void aBatchWhoseHandlersAllSucceedCommitsInOneTransaction() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 200);
        Map<String, Long> transactionOf = new ConcurrentHashMap<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consume(consumer("whole", 5), batch, (tx, message) -> {
            ship(tx, message);
            transactionOf.put(message.id(), transactionId(tx));
        });

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 200), outcomes(results));
        assertEquals(1, transactionOf.values().stream().distinct().count());
        batch.forEach(message -> assertEquals(1, shipments(message.id()), message.id()));
    }

    @Test
    void afterAFailedHandlerTheBatchRunsAgainWithSavepointsInPartsOfAtMost64InTheBatchsOrder() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 200);
        String failing = batch.get(10).id();
        Map<String, Long> transactionOf = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consume(consumer("parting", 5), batch, (tx, message) -> {
            runs.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
            ship(tx, message);
            transactionOf.put(message.id(), transactionId(tx)); // the last run's: the one that committed
            if (message.id().equals(failing)) {
                throw new IllegalStateException("downstream lookup failed");
            }
        });

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 199, Delivery.Outcome.TRANSIENT_FAILURE, 1), outcomes(results));
        assertEquals(1, runs.get(failing).get(), "the failed message is decided from its failure, not run again");
        List<Long> transactions = batch.stream().filter(message -> !message.id().equals(failing))
                .map(message -> transactionOf.get(message.id())).distinct().toList();
        assertEquals(4, transactions.size(), "200 messages in parts of 64: 64, 64, 64 and 8");
        assertEquals(transactions.stream().sorted().toList(), transactions, "the parts ran one after another, in order");
        for (int m = 0; m < batch.size(); m++) {
            String id = batch.get(m).id();
            if (!id.equals(failing)) {
                assertEquals(transactions.get(m / IdempotentBatchConsumer.MAX_MESSAGES_PER_TRANSACTION), transactionOf.get(id),
                        "message " + m);
            }
            assertEquals(id.equals(failing) ? 0 : 1, shipments(id), "message " + m);
        }
    }

    @Test
    void aPartThatDoesNotCommitKeepsTheEarlierPartsAndRunsNoLaterOne() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 150);
        String failing = batch.get(10).id(); // makes the batch run again in parts
        String killer = batch.get(100).id(); // in the second part, 64 to 127
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consume(consumer("partfailing", 5), batch, (tx, message) -> {
            runs.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
            ship(tx, message);
            if (message.id().equals(failing)) {
                throw new IllegalStateException("downstream lookup failed");
            }
            if (message.id().equals(killer) && runs.get(failing) != null) {
                tx.handle().createQuery("SELECT pg_terminate_backend(pg_backend_pid())").mapTo(Boolean.class).one();
            }
        });

        for (int m = 128; m < batch.size(); m++) {
            assertEquals(null, runs.get(batch.get(m).id()), "the third part never ran: message " + m);
        }
        for (int m = 0; m < batch.size(); m++) {
            Delivery.Outcome expected = m < 64 && m != 10 ? Delivery.Outcome.APPLIED : Delivery.Outcome.TRANSIENT_FAILURE;
            assertEquals(expected, results.get(m).delivery().outcome(), "message " + m);
            assertEquals(m < 64 && m != 10 ? 1 : 0, shipments(batch.get(m).id()), "message " + m);
        }
        List<IdempotentBatchConsumer.Result<Message>> redelivered = consume(consumer("partfailing", 5), batch,
                IdempotentBatchConsumerTest::ship);
        assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 63, Delivery.Outcome.APPLIED, 87), outcomes(redelivered));
    }

    @Test
    void aCommitThatFailsAfterTheHandlersLeavesNothingAndTheRedeliveryRunsEveryMessage() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        db.schema.execute("CREATE TABLE IF NOT EXISTS audit (entry text UNIQUE DEFERRABLE INITIALLY DEFERRED)");
        List<Message> batch = messages(prefix, 10);
        IdempotentBatchConsumer consumer = consumer("auditing", 5);

        // Each handler's write is fine on its own; together they break a constraint checked only at COMMIT.
        List<IdempotentBatchConsumer.Result<Message>> failed = consume(consumer, batch, (tx, message) -> {
            ship(tx, message);
            tx.handle().execute("INSERT INTO audit (entry) VALUES (?)", prefix);
        });

        assertEquals(Map.of(Delivery.Outcome.TRANSIENT_FAILURE, 10), outcomes(failed));
        assertTrue(failed.stream().allMatch(result -> result.delivery().retryLater()), "nothing may be acknowledged");
        assertRedeliveryRunsEveryMessageOnce(consumer, batch, prefix, "auditing");
    }

    @Test
    void eventsAHandlerPublishesCommitWithItsMessageAndVanishWithAFailedOne() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        String failing = batch.get(1).id();

        List<IdempotentBatchConsumer.Result<Message>> results = consume(consumer("projecting", 5), batch, (tx, message) -> {
            ship(tx, message);
            tx.outbox().publish("shipments", message.id(), Map.of("shipped", message.id()));
            tx.outbox().publish("shipments", message.id(), Map.of("second", message.id()));
            if (message.id().equals(failing)) {
                throw new IllegalStateException("after publishing");
            }
        });

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 4, Delivery.Outcome.TRANSIENT_FAILURE, 1), outcomes(results));
        for (Message message : batch) {
            boolean good = !message.id().equals(failing);
            assertEquals(good ? 2 : 0, db.outboxEvents("t1", message.id()), message.id());
            assertEquals(good ? 1 : 0, db.keyRows("projecting:" + message.id(), "t1"), message.id());
        }
    }

    @Test
    void aMessageAnotherTransactionHoldsPastTheWaitBudgetMakesTheBatchInProgressAndRunsNothing() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        IdempotentBatchConsumer impatient = IdempotentBatchConsumer.builder(
                db.executor(config -> config.waitBudget(Duration.ofMillis(200))), "holding").build();
        AtomicInteger runs = new AtomicInteger();
        IdempotentBatchConsumer.Handler<Message> handler = (tx, message) -> {
            runs.incrementAndGet();
            ship(tx, message);
        };
        try (Handle holder = db.jdbi.open()) {
            holder.begin();
            // Another consumer instance is applying message 3 right now: its key row is uncommitted.
            holder.execute("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, expires_at) "
                    + "VALUES ('t1', ?, 'processing', now() + interval '1 day')", "holding:" + batch.get(3).id());

            List<IdempotentBatchConsumer.Result<Message>> waited = consume(impatient, batch, handler);

            assertEquals(Map.of(Delivery.Outcome.IN_PROGRESS, 5), outcomes(waited));
            assertTrue(waited.stream().allMatch(result -> result.delivery().retryLater()));
            assertEquals(0, runs.get());
            holder.rollback();
        }
        assertRedeliveryRunsEveryMessageOnce(impatient, batch, prefix, "holding");
    }

    @Test
    void anExpiredSettledKeyIsClaimedAgainAsTheExecutorWouldReclaimIt() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 3);
        IdempotentBatchConsumer consumer = consumer("expiring", 5);
        IdempotentBatchConsumer.Handler<Message> handler = IdempotentBatchConsumerTest::ship;
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 3), outcomes(consume(consumer, batch, handler)));
        db.schema.execute("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' "
                + "WHERE idempotency_key = 'expiring:" + batch.get(0).id() + "'");

        List<IdempotentBatchConsumer.Result<Message>> again = consume(consumer, batch, handler);

        assertEquals(Delivery.Outcome.APPLIED, outcomeOf(again, batch.get(0).id()));
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 1, Delivery.Outcome.DUPLICATE, 2), outcomes(again));
        assertEquals(2, shipments(batch.get(0).id()), "past its retention a message id is new again, as in the executor");
        assertEquals(1, shipments(batch.get(1).id()));
    }

    @Test
    void failedAttemptsCountTogetherWithTheOneMessageConsumerOfTheSameName() {
        String messageId = UUID.randomUUID().toString();
        IdempotentConsumer<PostgresTransaction> single = IdempotentConsumer.builder(executor, "counting").maxAttempts(2).build();
        Delivery first = single.consume(messageId, "t1", tx -> {
            throw new IllegalStateException("first attempt");
        });
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, first.outcome());

        List<IdempotentBatchConsumer.Result<Message>> second = consume(consumer("counting", 2),
                List.of(new Message(messageId, "t1", "p")), (tx, message) -> {
                    throw new IllegalStateException("second attempt");
                });

        assertEquals(Delivery.Outcome.DEAD_LETTER, second.get(0).delivery().outcome());
        assertEquals(0, db.keyRows("counting:" + messageId, "t1"));
    }

    @Test
    void aMalformedMessageIdIsInvalidAndTheOthersAreApplied() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = new ArrayList<>(messages(prefix, 2));
        batch.add(1, new Message(" ", "t1", "blank id"));

        List<IdempotentBatchConsumer.Result<Message>> results = consume(consumer("validating", 5), batch,
                IdempotentBatchConsumerTest::ship);

        assertEquals(List.of(Delivery.Outcome.APPLIED, Delivery.Outcome.INVALID, Delivery.Outcome.APPLIED),
                results.stream().map(result -> result.delivery().outcome()).toList());
        assertEquals(0, shipments(" "));
    }

    @Test
    void aHandlerThatCommitsTheBatchItselfIsRefusedAndNothingOfTheBatchIsCommitted() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        IdempotentBatchConsumer consumer = consumer("committing", 5);

        // The claims are stored completed: V11's check makes a commit other than the consumer's fail.
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> consume(consumer, batch,
                (tx, message) -> {
                    ship(tx, message);
                    if (message.id().equals(batch.get(2).id())) {
                        tx.handle().commit();
                    }
                }));

        assertTrue(refused.getMessage().contains("Nothing was stored"), refused.getMessage());
        for (Message message : batch) {
            assertEquals(0, shipments(message.id()), message.id());
            assertEquals(0, db.keyRows("committing:" + message.id(), "t1"), message.id());
        }
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 5), outcomes(consume(consumer, batch, IdempotentBatchConsumerTest::ship)));
        batch.forEach(message -> assertEquals(1, shipments(message.id()), message.id()));
    }

    @Test
    void aCommitSentThroughTheRawConnectionFailsAndTheBatchRunsAgainWhenRedelivered() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        IdempotentBatchConsumer consumer = consumer("raw-commit", 5);
        AtomicInteger refusedCommits = new AtomicInteger();

        // Jdbi does not see this commit; PostgreSQL refuses it, so the redelivery finds no claim to replay.
        List<IdempotentBatchConsumer.Result<Message>> results = consumer.consumeAll(batch, Message::id, Message::tenant,
                (tx, messages) -> {
                    shipAll(tx, messages);
                    try {
                        tx.handle().getConnection().commit();
                    } catch (SQLException e) {
                        assertEquals("IH002", e.getSQLState(), e.getMessage());
                        refusedCommits.incrementAndGet();
                        throw e;
                    }
                });

        assertTrue(refusedCommits.get() >= 1, "the handler's commit was refused");
        assertTrue(results.stream().allMatch(result -> result.delivery().retryLater()), "nothing may be acknowledged");
        for (Message message : batch) {
            assertEquals(0, shipments(message.id()), message.id());
            assertEquals(0, db.keyRows("raw-commit:" + message.id(), "t1"), message.id());
        }
        assertRedeliveryRunsEveryMessageOnce(consumer, batch, prefix, "raw-commit");
    }

    @Test
    void aBatchOfNewMessagesClaimsItsKeysCompletedSoEachKeyRowIsWrittenOnce() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 3);
        List<String> seenByHandler = new ArrayList<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consumer("once", 5).consumeAll(batch, Message::id,
                Message::tenant, shipAllSeeingOwnClaim(seenByHandler));

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 3), outcomes(results));
        assertEquals(List.of("completed"), seenByHandler);
        batch.forEach(message -> assertEquals("completed", db.keyRow("once:" + message.id(), "t1").get("status")));
    }

    @Test
    void onASchemaBeforeV11ABatchClaimsItsKeysProcessingAndStillAppliesEachMessageOnce() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(beforeV11.executor(), "old-schema").build();
        List<String> seenByHandler = new ArrayList<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consumer.consumeAll(batch, Message::id, Message::tenant,
                shipAllSeeingOwnClaim(seenByHandler));
        List<IdempotentBatchConsumer.Result<Message>> replayed = consumer.consume(batch, Message::id, Message::tenant,
                IdempotentBatchConsumerTest::ship);

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 5), outcomes(results));
        assertEquals(List.of("processing"), seenByHandler);
        assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 5), outcomes(replayed));
        for (Message message : batch) {
            assertEquals(1, shipments(beforeV11, message.id()), message.id());
            assertEquals("completed", beforeV11.keyRow("old-schema:" + message.id(), "t1").get("status"));
        }
    }

    @Test
    void onASchemaBeforeV11AHandlerThatCommitsItselfIsRefusedAndWhatItCommittedIsMarkedForReconciliation() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 5);
        IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(beforeV11.executor(), "committing").build();

        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> consume(consumer, batch,
                (tx, message) -> {
                    ship(tx, message);
                    if (message.id().equals(batch.get(2).id())) {
                        tx.handle().commit();
                    }
                }));

        assertTrue(refused.getMessage().contains(CallbackRunner.ENDED_BY_CALLBACK), refused.getMessage());
        for (int m = 0; m < 5; m++) {
            String id = batch.get(m).id();
            assertEquals(m <= 2 ? 1 : 0, shipments(beforeV11, id), id);
            assertEquals(m <= 2 ? 1 : 0, beforeV11.keyRows("committing:" + id, "t1"), id);
        }
        List<IdempotentBatchConsumer.Result<Message>> redelivered = consume(consumer, batch, IdempotentBatchConsumerTest::ship);
        assertEquals(Map.of(Delivery.Outcome.FAILED_PERMANENTLY, 3, Delivery.Outcome.APPLIED, 2), outcomes(redelivered));
        assertEquals(1, shipments(beforeV11, batch.get(0).id()));
        assertEquals(1, shipments(beforeV11, batch.get(4).id()));
    }

    @Test
    void aBatchWaitsForPostgresOnceForItsClaimOncePerHandlerWriteAndOnceForItsCompletionAndCommit() {
        IdempotentBatchConsumer consumer = consumer("counted", 5);
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        consume(consumer, messages(prefix + "-warm", 2), IdempotentBatchConsumerTest::ship); // the pooler probe, once
        List<Message> batch = messages(prefix, 20);
        AtomicInteger roundTrips = new AtomicInteger();

        List<IdempotentBatchConsumer.Result<Message>> results = RoundTrips.count(roundTrips,
                () -> consume(consumer, batch, IdempotentBatchConsumerTest::ship));

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 20), outcomes(results));
        batch.forEach(message -> assertEquals(1, shipments(message.id()), message.id()));
        // The claim (which begins), one per handler's insert, and the completion with the COMMIT in the same flush.
        assertEquals(22, roundTrips.get());
    }

    @Test
    void aHandlerThatDeletesItsMessagesKeyRowMakesTheCompletionRefuseTheCommitAndTheRedeliveryRunsEveryMessage() {
        // The completion stores 10 outcomes or none: a claim gone from under it must not commit the others' writes.
        assertHandlerChangingItsKeyRowGetsTheBatchRefused("deleting", 4,
                "DELETE FROM idempotency_keys WHERE tenant_id = ? AND idempotency_key = ?");
    }

    @Test
    void aHandlerThatUpdatesItsMessagesKeyRowMakesTheSealRefuseTheCommitAndTheRedeliveryRunsEveryMessage() {
        // The seal finds the claims at the rows the claim inserted: a claim rewritten by the handler is not one of them.
        assertHandlerChangingItsKeyRowGetsTheBatchRefused("updating", 6,
                "UPDATE idempotency_keys SET updated_at = now() WHERE tenant_id = ? AND idempotency_key = ?");
    }

    /**
     * A batch of 10 whose handler runs {@code change} (bound to its tenant and key) on the key row of
     * message {@code changing}: nothing of the batch commits or is acknowledged, and a redelivery runs each message once.
     */
    private static void assertHandlerChangingItsKeyRowGetsTheBatchRefused(String consumerName, int changing, String change) {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 10);
        String changingId = batch.get(changing).id();
        IdempotentBatchConsumer consumer = consumer(consumerName, 5);

        List<IdempotentBatchConsumer.Result<Message>> refused = consume(consumer, batch, (tx, message) -> {
            ship(tx, message);
            if (message.id().equals(changingId)) {
                tx.handle().execute(change, tx.tenant(), tx.key());
            }
        });

        assertEquals(Map.of(Delivery.Outcome.TRANSIENT_FAILURE, 10), outcomes(refused));
        assertTrue(refused.stream().allMatch(result -> result.delivery().retryLater()), "nothing may be acknowledged");
        assertRedeliveryRunsEveryMessageOnce(consumer, batch, prefix, consumerName);
    }

    @Test
    void twoConsumersGivenTheSameBatchAtOnceApplyEachMessageOnceAndTheOneThatWaitedReplaysThem() throws Exception {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<Message> batch = messages(prefix, 30);
        List<Message> redelivered = new ArrayList<>(batch);
        Collections.shuffle(redelivered, new Random(40)); // the other instance got them in another order
        IdempotentBatchConsumer first = consumer("racing", 5);
        IdempotentBatchConsumer second = IdempotentBatchConsumer.builder(db.executor(), "racing").build();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        CountDownLatch claimed = new CountDownLatch(1);
        IdempotentBatchConsumer.Handler<Message> handler = (tx, message) -> {
            if (runs.isEmpty()) {
                claimed.countDown();
                // The first batch holds its claims, uncommitted, until the second batch's claim waits on them.
                db.awaitCallersWaitingOnAKeyRow(1);
            }
            runs.computeIfAbsent(message.id(), id -> new AtomicInteger()).incrementAndGet();
            ship(tx, message);
        };
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<List<IdempotentBatchConsumer.Result<Message>>> firstResults = pool.submit(() -> consume(first, batch, handler));
            assertTrue(claimed.await(30, TimeUnit.SECONDS), "the first batch claimed its messages");
            Future<List<IdempotentBatchConsumer.Result<Message>>> secondResults =
                    pool.submit(() -> consume(second, redelivered, handler));

            assertEquals(Map.of(Delivery.Outcome.APPLIED, 30), outcomes(firstResults.get(30, TimeUnit.SECONDS)));
            assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 30), outcomes(secondResults.get(30, TimeUnit.SECONDS)));
        } finally {
            pool.shutdownNow();
        }
        assertEquals(30, runs.size());
        for (Message message : batch) {
            assertEquals(1, runs.get(message.id()).get(), message.id());
            assertEquals(1, shipments(message.id()), message.id());
        }
        assertEquals(30, keyRowsOf("racing", prefix));
    }

    /** The business write of a {@link IdempotentBatchConsumer.BatchHandler}: one shipment per message, in one JDBC batch. */
    private static void shipAll(PostgresTransaction tx, List<Message> messages) {
        PreparedBatch insert = tx.handle().prepareBatch("INSERT INTO shipments (message_id, payload) VALUES (:m, :p)");
        for (Message message : messages) {
            insert.bind("m", message.id()).bind("p", message.payload()).add();
        }
        insert.execute();
    }

    @Test
    void aBatchHandlerGetsTheBatchsNewMessagesInOneCallAndABatchOfNewOnesWaitsForPostgresThreeTimes() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        IdempotentBatchConsumer consumer = consumer("loading", 5);
        List<Message> distinct = messages(prefix, 60);
        consumer.consumeAll(distinct.subList(0, 10), Message::id, Message::tenant, IdempotentBatchConsumerTest::shipAll);
        AtomicInteger freshRoundTrips = new AtomicInteger();
        List<Message> fresh = messages(prefix + "-fresh", 20);
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 20), outcomes(RoundTrips.count(freshRoundTrips, () -> consumer.consumeAll(
                fresh, Message::id, Message::tenant, IdempotentBatchConsumerTest::shipAll))));
        // The claim, the handler's JDBC batch of 20 inserts, and the completion with the COMMIT.
        assertEquals(3, freshRoundTrips.get());
        List<Message> batch = new ArrayList<>(distinct);
        batch.addAll(distinct.subList(10, 30)); // 20 copies inside the batch
        Collections.shuffle(batch, new Random(41));
        List<List<String>> calls = new ArrayList<>();
        AtomicInteger roundTrips = new AtomicInteger();

        List<IdempotentBatchConsumer.Result<Message>> results = RoundTrips.count(roundTrips,
                () -> consumer.consumeAll(batch, Message::id, Message::tenant, (tx, messages) -> {
                    calls.add(messages.stream().map(Message::id).toList());
                    shipAll(tx, messages);
                }));

        // 10 consumed before and 20 copies are replays: the handler gets the 50 others once, in the batch's order.
        List<String> expected = batch.stream().map(Message::id).filter(id -> distinct.subList(10, 60).stream()
                .anyMatch(message -> message.id().equals(id))).distinct().toList();
        assertEquals(List.of(expected), calls);
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 50, Delivery.Outcome.DUPLICATE, 30), outcomes(results));
        distinct.forEach(message -> assertEquals(1, shipments(message.id()), message.id()));
        assertEquals(80, keyRowsOf("loading", prefix));
        // The claim, the read of the 10 keys it found taken, the handler's JDBC batch of 50, the completion with the COMMIT.
        assertEquals(4, roundTrips.get());

        calls.clear();
        List<IdempotentBatchConsumer.Result<Message>> redelivered = consumer.consumeAll(batch, Message::id, Message::tenant,
                (tx, messages) -> calls.add(messages.stream().map(Message::id).toList()));
        assertEquals(Map.of(Delivery.Outcome.DUPLICATE, 80), outcomes(redelivered));
        assertEquals(List.of(), calls, "a batch of replays calls no handler");
    }

    @Test
    void aBatchHandlerCallThatFailsIsRunAgainMessageByMessageAndOnlyTheBadMessagesFail() {
        BadOnes bad = BadOnes.amongTen();
        List<Integer> callSizes = new ArrayList<>();
        IdempotentBatchConsumer.BatchHandler<Message> handler = (tx, messages) -> {
            callSizes.add(messages.size());
            shipAll(tx, messages); // written first: a failed call's writes must be undone
            bad.failIfAmong(tx, messages.stream().map(Message::id).toList());
        };

        List<IdempotentBatchConsumer.Result<Message>> results = consumer("stocking", 2).consumeAll(bad.batch(), Message::id,
                Message::tenant, handler);

        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, outcomeOf(results, bad.failing()));
        assertEquals(Delivery.Outcome.TRANSIENT_FAILURE, outcomeOf(results, bad.poison()));
        assertEquals(Delivery.Outcome.FAILED_PERMANENTLY, outcomeOf(results, bad.refused()));
        assertEquals(Map.of(Delivery.Outcome.APPLIED, 7, Delivery.Outcome.TRANSIENT_FAILURE, 2,
                Delivery.Outcome.FAILED_PERMANENTLY, 1), outcomes(results));
        // The call for all 10 failed, without saying for which: each ran again alone, in a savepoint of its own.
        assertEquals(List.of(10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), callSizes);
        for (Message message : bad.batch()) {
            boolean good = !List.of(bad.failing(), bad.poison(), bad.refused()).contains(message.id());
            assertEquals(good ? 1 : 0, shipments(message.id()), message.id());
        }
        assertEquals("failed", db.keyRow("stocking:" + bad.refused(), "t1").get("status"));
    }

    @Test
    void aBatchHandlerIsCalledOncePerRunOfOneTenantAndItsEventsCommitWithTheBatch() {
        String prefix = UUID.randomUUID().toString().substring(0, 8);
        List<String> tenants = List.of("t1", "t1", "t2", "t2", "t2", "t1");
        List<Message> batch = new ArrayList<>();
        for (int m = 0; m < tenants.size(); m++) {
            batch.add(new Message(prefix + "-" + m, tenants.get(m), "payload " + m));
        }
        List<String> calls = new ArrayList<>();

        List<IdempotentBatchConsumer.Result<Message>> results = consumer("notifying", 5).consumeAll(batch, Message::id,
                Message::tenant, (tx, messages) -> {
                    calls.add(tx.tenant() + " " + tx.key() + " " + messages.size());
                    for (Message message : messages) {
                        assertEquals(tx.tenant(), message.tenant());
                        tx.outbox().publish("notifications", message.id(), Map.of("shipped", message.id()));
                    }
                    shipAll(tx, messages);
                });

        assertEquals(Map.of(Delivery.Outcome.APPLIED, 6), outcomes(results));
        assertEquals(List.of("t1 notifying:" + prefix + "-0 2", "t2 notifying:" + prefix + "-2 3",
                "t1 notifying:" + prefix + "-5 1"), calls);
        for (Message message : batch) {
            assertEquals(1, db.outboxEvents(message.tenant(), message.id()), message.id());
            assertEquals("completed", db.keyRow("notifying:" + message.id(), message.tenant()).get("status"));
        }
    }

    /** A batch handler that adds the status of its call's key row, as it sees it, to {@code seen}, then ships. */
    private static IdempotentBatchConsumer.BatchHandler<Message> shipAllSeeingOwnClaim(List<String> seen) {
        return (tx, messages) -> {
            seen.add(tx.handle().createQuery("SELECT status FROM idempotency_keys WHERE tenant_id = :t AND idempotency_key = :k")
                    .bind("t", tx.tenant()).bind("k", tx.key()).mapTo(String.class).one());
            shipAll(tx, messages);
        };
    }

    private static void assertRedeliveryRunsEveryMessageOnce(IdempotentBatchConsumer consumer, List<Message> batch,
                                                            String prefix, String consumerName) {
        for (Message message : batch) {
            assertEquals(0, shipments(message.id()), message.id());
        }
        assertEquals(0, keyRowsOf(consumerName, prefix));
        AtomicInteger runs = new AtomicInteger();
        List<IdempotentBatchConsumer.Result<Message>> redelivered = consume(consumer, batch, (tx, message) -> {
            runs.incrementAndGet();
            ship(tx, message);
        });
        assertEquals(Map.of(Delivery.Outcome.APPLIED, batch.size()), outcomes(redelivered));
        assertEquals(batch.size(), runs.get());
        for (Message message : batch) {
            assertEquals(1, shipments(message.id()), message.id());
        }
    }
}

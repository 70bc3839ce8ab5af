package dev.idempotency.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * The README's Quick start, lease mode, consumer and batch consumer snippets, as code the build compiles and
 * {@code ReadmeExamplesTest} runs. The regions between {@code tag::name[]} and {@code end::name[]}
 * are what the README shows (regions of one name are joined); the test fails when they differ.
 * Only the public API is used, from a package of its own, as a user's code would.
 */
class ReadmeExamples {
    record PaymentRequest(String account, long cents) {
    }

    record Receipt(long paymentId, String status) {
    }

    record PaymentCaptured(long paymentId, long cents) {
    }

    record Charge(String id, long cents) {
    }

    record Message(String id, String tenant, String orderId) {
    }

    /** The card network the lease-mode example charges: an external call that cannot roll back. */
    interface CardNetwork {
        Charge charge(PaymentRequest request, String idempotencyKey) throws IOException;
    }

    /** Where the Quick start's handler writes its response header. */
    interface Response {
        void header(String name, String value);
    }

    /** What the consumer example did with the delivery, as a broker client would. */
    interface Broker {
        void ack();

        void nackAndRequeue();

        void deadLetter();
    }

    /** The pool and executor the Quick start builds. */
    record Started(HikariDataSource pool, PostgresIdempotentExecutor executor) implements AutoCloseable {
        @Override
        public void close() {
            pool.close();
        }
    }

    static Started quickStartSetUp(HikariConfig hikariConfig) {
        // tag::quickstart[]
        HikariDataSource pool = new HikariDataSource(hikariConfig);
        IdempotencyMigrations.migrate(pool);                 // creates schema "idempotency"; a no-op when up to date

        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool)
                .config(IdempotencyConfig.builder()
                        .retention(Duration.ofHours(24))     // how long a key replays
                        .waitBudget(Duration.ofSeconds(5))   // how long a concurrent duplicate waits
                        .build())
                .build();
        // end::quickstart[]
        return new Started(pool, executor);
    }

    static Outcome<Receipt> quickStartHandler(PostgresIdempotentExecutor executor, String idempotencyKey, String tenantId,
                                              PaymentRequest request, Response response) {
        // tag::quickstart[]
        // In a request handler: the client's Idempotency-Key header, and who the client is.
        Outcome<Receipt> outcome = executor.run(idempotencyKey, tenantId,
                RequestFingerprint.ofJson(request), Receipt.class, tx -> {
                    long paymentId = tx.handle()
                            .createUpdate("INSERT INTO payments (account, cents) VALUES (:a, :c)")
                            .bind("a", request.account()).bind("c", request.cents())
                            .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
                    if (declined(request)) {
                        // Stored and replayed as the same failure; the payment insert above is rolled back.
                        throw new BusinessFailure("card_declined", "The card was declined");
                    }
                    tx.outbox().publish("payments", request.account(), new PaymentCaptured(paymentId, request.cents()));
                    return new Receipt(paymentId, "captured");
                });

        response.header("Idempotent-Replayed", String.valueOf(outcome.replayed()));
        // end::quickstart[]
        return outcome;
    }

    /** The example's business rule: amounts over 1,000.00 are declined. */
    static boolean declined(PaymentRequest request) {
        return request.cents() > 100_000;
    }

    static Outcome<Receipt> leaseMode(PostgresIdempotentExecutor executor, String idempotencyKey, String tenantId,
                                      PaymentRequest request, CardNetwork cardNetwork) throws IOException {
        // tag::lease[]
        Outcome<Receipt> outcome = executor.runWithLease(
                LeaseRequest.builder(idempotencyKey, tenantId)
                        .lease(Duration.ofSeconds(30))
                        .fingerprint(RequestFingerprint.ofJson(request))
                        .resultType(Receipt.class)
                        .build(),
                lease -> cardNetwork.charge(request, lease.key()),        // outside any transaction
                (tx, charge) -> {                                         // one transaction, if the lease still holds
                    long paymentId = tx.handle()
                            .createUpdate("INSERT INTO payments (account, cents, charge_id) VALUES (:a, :n, :c)")
                            .bind("a", request.account()).bind("n", request.cents()).bind("c", charge.id())
                            .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
                    tx.outbox().publish("payments", request.account(), charge);
                    return new Receipt(paymentId, "captured");
                });
        // end::lease[]
        return outcome;
    }

    static Delivery consumer(PostgresIdempotentExecutor executor, Message message, Broker broker) {
        String orderId = message.orderId();
        // tag::consumer[]
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(executor, "shipping").build();

        Delivery delivery = consumer.consume(message.id(), message.tenant(), tx ->
                tx.handle().createUpdate("INSERT INTO shipments (order_id) VALUES (:o)").bind("o", orderId).execute());
        if (delivery.acknowledge()) {
            broker.ack();
        } else if (delivery.retryLater()) {
            broker.nackAndRequeue();
        } else {
            broker.deadLetter();
        }
        // end::consumer[]
        return delivery;
    }

    /** What the batch consumer example did with each message, as a broker client would. */
    interface BatchBroker {
        void ack(Message message);

        void nackAndRequeue(Message message);

        void deadLetter(Message message);
    }

    static List<IdempotentBatchConsumer.Result<Message>> batchConsumer(PostgresIdempotentExecutor executor,
                                                                       List<Message> messages, BatchBroker broker) {
        // tag::batch-consumer[]
        IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(executor, "shipping").build();

        List<IdempotentBatchConsumer.Result<Message>> results = consumer.consume(messages, Message::id, Message::tenant,
                (tx, message) -> tx.handle().createUpdate("INSERT INTO shipments (order_id) VALUES (:o)")
                        .bind("o", message.orderId()).execute());
        // consume() has committed: only now tell the broker.
        for (IdempotentBatchConsumer.Result<Message> result : results) {
            Delivery delivery = result.delivery();
            if (delivery.acknowledge()) {
                broker.ack(result.message());
            } else if (delivery.retryLater()) {
                broker.nackAndRequeue(result.message());
            } else {
                broker.deadLetter(result.message());
            }
        }
        // end::batch-consumer[]
        return results;
    }

    static List<IdempotentBatchConsumer.Result<Message>> batchConsumerAll(IdempotentBatchConsumer consumer,
                                                                          List<Message> messages) {
        // tag::batch-consumer-all[]
        List<IdempotentBatchConsumer.Result<Message>> results = consumer.consumeAll(messages, Message::id, Message::tenant,
                (tx, fresh) -> {
                    PreparedBatch insert = tx.handle().prepareBatch("INSERT INTO shipments (order_id) VALUES (:o)");
                    for (Message message : fresh) {
                        insert.bind("o", message.orderId()).add();
                    }
                    insert.execute();
                });
        // end::batch-consumer-all[]
        return results;
    }
}

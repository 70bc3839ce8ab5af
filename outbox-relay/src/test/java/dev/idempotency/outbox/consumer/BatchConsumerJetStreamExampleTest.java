package dev.idempotency.outbox.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import io.nats.client.ConsumeOptions;
import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.IterableConsumer;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch consumer on JetStream's own batch API, as an application would write it: a durable pull
 * consumer read through the client's {@code iterate()}, which keeps pulls of up to two batches
 * outstanding so that the next batch arrives while this one is in the database; up to 100 messages are
 * gathered, {@link IdempotentBatchConsumer#consumeAll} applies them in one transaction, their shipments
 * written in one JDBC batch, and only then are they acknowledged, each by its result. The first batch is "lost"
 * after its commit and before its acks (nak'ed, as a crash would leave it): JetStream redelivers it
 * and every message of it is a replay.
 */
@Timeout(120)
class BatchConsumerJetStreamExampleTest {
    private static final int MESSAGES = 250;
    private static final int BATCH = 100;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireNats();
    }

    @Test
    void pullFetchedBatchesAreAppliedOnceEachAndAcknowledgedOnlyAfterTheirCommit() throws Exception {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        String stream = "BATCH_EXAMPLE_" + suffix;
        String subject = "batchexample." + suffix + ".orders";
        try (TestSchema schema = TestDatabase.get().newSchema("jsbatch", 4);
             Connection nats = Nats.connect("nats://127.0.0.1:" + Brokers.NATS_PORT)) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("CREATE TABLE shipments (message_id text NOT NULL)");
            JetStreamManagement management = nats.jetStreamManagement();
            management.addStream(StreamConfiguration.builder().name(stream).subjects(subject)
                    .storageType(StorageType.Memory).build());
            try {
                JetStream jetStream = nats.jetStream();
                for (int m = 0; m < MESSAGES; m++) {
                    Headers headers = new Headers();
                    headers.add("Nats-Msg-Id", UUID.randomUUID().toString()); // the relay's message id
                    headers.add(OutboxHeaders.TENANT, "t1");
                    jetStream.publish(NatsMessage.builder().subject(subject).headers(headers)
                            .data(("order " + m).getBytes(StandardCharsets.UTF_8)).build());
                }

                PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                        .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
                IdempotentBatchConsumer shipping = IdempotentBatchConsumer.builder(executor, "shipping").build();
                ConsumerContext consumer = nats.getStreamContext(stream).createOrUpdateConsumer(
                        ConsumerConfiguration.builder().durable("shipping-" + suffix).filterSubject(subject).build());
                AtomicInteger runs = new AtomicInteger();
                AtomicInteger replays = new AtomicInteger();
                Set<String> acknowledged = new HashSet<>();
                boolean crashed = false;
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                try (IterableConsumer pulled = consumer.iterate(ConsumeOptions.builder().batchSize(2 * BATCH).build())) {
                    while (acknowledged.size() < MESSAGES && System.nanoTime() < deadline) {
                        List<Message> batch = nextBatch(pulled);
                        if (batch.isEmpty()) {
                            continue;
                        }
                        List<IdempotentBatchConsumer.Result<Message>> results = shipping.consumeAll(batch,
                                message -> message.getHeaders().getFirst("Nats-Msg-Id"),
                                message -> message.getHeaders().getFirst(OutboxHeaders.TENANT),
                                (tx, fresh) -> { // the batch's messages to run, never a replay: their shipments in one JDBC batch
                                    runs.addAndGet(fresh.size());
                                    PreparedBatch shipments = tx.handle().prepareBatch("INSERT INTO shipments (message_id) VALUES (:id)");
                                    for (Message message : fresh) {
                                        shipments.bind("id", message.getHeaders().getFirst("Nats-Msg-Id")).add();
                                    }
                                    shipments.execute();
                                });
                        // consumeAll() has committed: from here on, acknowledging loses nothing.
                        if (!crashed) {
                            crashed = true;
                            batch.forEach(Message::nak); // a crash between the commit and the acks: all redelivered
                            continue;
                        }
                        for (IdempotentBatchConsumer.Result<Message> result : results) {
                            if (result.delivery().acknowledge()) {
                                result.message().ack();
                                acknowledged.add(result.message().getHeaders().getFirst("Nats-Msg-Id"));
                                if (result.delivery().outcome() == dev.idempotency.core.consumer.Delivery.Outcome.DUPLICATE) {
                                    replays.incrementAndGet();
                                }
                            } else if (result.delivery().retryLater()) {
                                result.message().nak();
                            } else {
                                result.message().term(); // dead-letter: never redelivered
                            }
                        }
                    }
                }

                Jdbi jdbi = Jdbi.create(schema.dataSource());
                assertEquals(MESSAGES, acknowledged.size());
                assertEquals(MESSAGES, count(jdbi, "SELECT count(*) FROM shipments"), "one shipment per message");
                assertEquals(MESSAGES, count(jdbi, "SELECT count(DISTINCT message_id) FROM shipments"));
                assertEquals(MESSAGES, runs.get(), "each handler ran once, redeliveries included");
                assertTrue(replays.get() > 0, "the batch redelivered after the crash was replayed");
            } finally {
                management.deleteStream(stream);
            }
        }
    }

    /** Up to a batch of messages: waits for the first, then takes what the outstanding pulls bring within a few milliseconds. */
    private static List<Message> nextBatch(IterableConsumer pulled) throws Exception {
        List<Message> batch = new ArrayList<>(BATCH);
        Message message = pulled.nextMessage(Duration.ofMillis(500));
        while (message != null) {
            batch.add(message);
            message = batch.size() == BATCH ? null : pulled.nextMessage(Duration.ofMillis(20));
        }
        return batch;
    }

    private static long count(Jdbi jdbi, String sql) {
        return jdbi.withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

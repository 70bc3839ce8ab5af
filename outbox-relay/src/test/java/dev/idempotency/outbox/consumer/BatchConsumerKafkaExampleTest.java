package dev.idempotency.outbox.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.testing.KafkaTestBroker;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch consumer on Kafka's own batch API, as an application would write it: {@code poll} up to
 * 100 records, {@link IdempotentBatchConsumer} applies each partition's records in one transaction,
 * and only then {@code commitSync} the partition's offset, up to the first record that does not
 * acknowledge; from that record on the partition is sought back and polled again. The first batch is
 * lost after its commit and before {@code commitSync} (the consumer closes, as a crash would leave it):
 * the group's next consumer gets it again and every record of it is a replay. A poison record (its
 * handler's SQL fails) is retried up to {@code maxAttempts}, undoing only its own writes each time, then
 * dead-lettered to a topic of its own, and the partition moves on; the records of its batches are
 * applied all the same, once each.
 */
@Timeout(180)
class BatchConsumerKafkaExampleTest {
    private static final int MESSAGES = 300;
    private static final int COPIES = 20;
    private static final int MAX_POLL = 100;
    private static final int MAX_ATTEMPTS = 3;
    private static final String POISON = "poison";

    private static KafkaTestBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = KafkaTestBroker.start();
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void polledBatchesAreAppliedOnceEachAndTheirOffsetsCommittedOnlyAfterTheirCommit() throws Exception {
        String topic = "orders-" + UUID.randomUUID();
        String deadLetterTopic = topic + ".dlt";
        broker.createTopic(topic, 2, Map.of());
        broker.createTopic(deadLetterTopic, 1, Map.of());
        String poisonId = null;
        try (TestSchema schema = TestDatabase.get().newSchema("kafkabatch", 4);
             KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                     ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                     ProducerConfig.ACKS_CONFIG, "all"), new StringSerializer(), new StringSerializer())) {
            IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
            schema.execute("CREATE TABLE shipments (message_id text NOT NULL)");
            for (int m = 0; m < MESSAGES; m++) {
                String id = UUID.randomUUID().toString(); // the relay's message id
                String value = m == 150 ? POISON : "order " + m;
                poisonId = m == 150 ? id : poisonId;
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, "customer-" + (m % 10), value);
                record.headers().add(KafkaPublisher.MESSAGE_ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
                record.headers().add(KafkaPublisher.TENANT_HEADER, "t1".getBytes(StandardCharsets.UTF_8));
                producer.send(record);
                if (m < COPIES) {
                    producer.send(record); // a copy, as a relay resends after a crash: the same key, the same id
                }
            }
            producer.flush();

            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                    .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
            IdempotentBatchConsumer shipping = IdempotentBatchConsumer.builder(executor, "shipping")
                    .maxAttempts(MAX_ATTEMPTS).build();
            Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
            IdempotentBatchConsumer.Handler<ConsumerRecord<String, String>> handler = (tx, record) -> {
                String id = header(record, KafkaPublisher.MESSAGE_ID_HEADER);
                runs.computeIfAbsent(id, key -> new AtomicInteger()).incrementAndGet();
                tx.handle().execute("INSERT INTO shipments (message_id) VALUES (?)", id);
                if (POISON.equals(record.value())) {
                    tx.handle().execute("INSERT INTO no_such_table VALUES (1)"); // aborts: undone to its savepoint
                }
            };

            String group = "shipping-" + UUID.randomUUID();
            Map<TopicPartition, Long> committed = new HashMap<>();
            Map<TopicPartition, Long> ends;
            List<String> deadLettered = new ArrayList<>();
            AtomicInteger replays = new AtomicInteger();
            boolean crashed = false;
            KafkaConsumer<String, String> consumer = consumer(group, topic);
            try {
                ends = consumer.endOffsets(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
                long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
                while (!committed.equals(ends) && System.nanoTime() < deadline) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                    for (TopicPartition partition : records.partitions()) {
                        List<ConsumerRecord<String, String>> batch = records.records(partition);
                        List<IdempotentBatchConsumer.Result<ConsumerRecord<String, String>>> results = shipping.consume(batch,
                                record -> header(record, KafkaPublisher.MESSAGE_ID_HEADER),
                                record -> header(record, KafkaPublisher.TENANT_HEADER), handler);
                        // consume() has committed: from here on, committing the offsets loses nothing.
                        if (!crashed) {
                            crashed = true;
                            consumer.close(); // a crash between the commit and commitSync: nothing committed
                            consumer = consumer(group, topic);
                            break;
                        }
                        long next = -1;
                        long retryFrom = -1;
                        for (IdempotentBatchConsumer.Result<ConsumerRecord<String, String>> result : results) {
                            ConsumerRecord<String, String> record = result.message();
                            if (result.delivery().acknowledge()) {
                                if (result.delivery().outcome() == dev.idempotency.core.consumer.Delivery.Outcome.DUPLICATE) {
                                    replays.incrementAndGet();
                                }
                            } else if (result.delivery().retryLater()) {
                                retryFrom = record.offset(); // this one and the rest of the partition come again
                                break;
                            } else {
                                producer.send(new ProducerRecord<>(deadLetterTopic, null, record.key(), record.value(),
                                        record.headers())).get(); // dead-lettered before its offset is committed
                                deadLettered.add(header(record, KafkaPublisher.MESSAGE_ID_HEADER));
                            }
                            next = record.offset() + 1;
                        }
                        if (next >= 0) {
                            consumer.commitSync(Map.of(partition, new OffsetAndMetadata(next)));
                            committed.put(partition, next);
                        }
                        if (retryFrom >= 0) {
                            consumer.seek(partition, retryFrom);
                        }
                    }
                }
            } finally {
                consumer.close();
            }

            Jdbi jdbi = Jdbi.create(schema.dataSource());
            assertEquals(ends, committed, "every partition's offset committed to its end");
            assertEquals(List.of(poisonId), deadLettered, "only the poison record was dead-lettered");
            assertEquals(MESSAGES - 1, count(jdbi, "SELECT count(*) FROM shipments"),
                    "one shipment per good message; none of the poison's attempts kept its write");
            assertEquals(MESSAGES - 1, count(jdbi, "SELECT count(DISTINCT message_id) FROM shipments"));
            assertEquals(MAX_ATTEMPTS, runs.get(poisonId).get(), "the poison ran maxAttempts times, then was dead-lettered");
            assertEquals(MESSAGES, runs.size());
            // A handler ahead of the poison in its first batch ran twice (the batch ran again with savepoints after
            // the poison failed, its first writes rolled back); every other one once, replays included.
            String poison = poisonId;
            long twice = runs.entrySet().stream().filter(run -> !run.getKey().equals(poison))
                    .filter(run -> run.getValue().get() != 1).count();
            assertTrue(twice <= MAX_POLL, "handlers run again: " + twice);
            assertTrue(runs.values().stream().allMatch(run -> run.get() <= MAX_ATTEMPTS));
            // The crashed batch, the copies and the records polled again behind the poison were all replays.
            assertTrue(replays.get() >= COPIES, "replays: " + replays.get());
        }
    }

    private static KafkaConsumer<String, String> consumer(String group, String topic) {
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, // offsets are committed only after the database's commit
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_POLL), new StringDeserializer(), new StringDeserializer());
        consumer.subscribe(List.of(topic));
        return consumer;
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static long count(Jdbi jdbi, String sql) {
        return jdbi.withHandle(h -> h.createQuery(sql).mapTo(Long.class).one());
    }
}

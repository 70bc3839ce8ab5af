package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.testing.LockWaits;
import java.util.List;
import java.util.Map;
import dev.idempotency.core.Outcome;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@org.junit.jupiter.api.Timeout(60)
class OutboxTest {
    record PaymentCaptured(String paymentKey, long cents) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);

    @Test
    void eventsCommitWithTheResultInTheOrderTheCallbackEmittedThem() throws Exception {
        AtomicInteger signals = new AtomicInteger();
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(db.schema.dataSource())
                .config(db.executor().config())
                .afterOutboxCommit(signals::incrementAndGet)
                .build();
        String key = newKey();

        executor.run(key, "t1", tx -> {
            insertPayment(tx, 1000);
            tx.outbox().publish("payments", key, new PaymentCaptured(key, 1000), Map.of("trace-id", "abc"));
            tx.outbox().publishJson("payments", key, "{\"step\": 2}");
            return "ok";
        });
        executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", key, Map.of("never", true));
            return "replay does not run this";
        });

        List<Map<String, Object>> rows = db.outboxRows("t1", key);
        assertEquals(2, rows.size());
        JsonNode first = JSON.readTree((String) rows.get(0).get("payload"));
        assertEquals(1000, first.get("cents").asLong());
        assertEquals(key, first.get("paymentKey").asText());
        assertEquals("abc", JSON.readTree((String) rows.get(0).get("headers")).get("trace-id").asText());
        assertEquals(2, JSON.readTree((String) rows.get(1).get("payload")).get("step").asInt());
        assertEquals("payments", rows.get(0).get("topic"));
        assertEquals("pending", rows.get(0).get("status"));
        assertTrue((Long) rows.get(0).get("id") < (Long) rows.get(1).get("id"));
        assertEquals(1, signals.get());
    }

    /** One event is written with plain values, several with arrays: both keep every character. */
    @ParameterizedTest(name = "{0} event(s)")
    @ValueSource(ints = {1, 2})
    void eventsKeepEveryCharacterOfTheirKeyPayloadAndHeaders(int events) throws Exception {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        // The characters text[] literals quote or escape, and the word NULL, which must stay a word.
        String awkward = "NULL, {a,b} \"quoted\" back\\slash 'single' \u00e9\u6f22 \uD83D\uDCB3";
        String partitionKey = key + " " + awkward;

        executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", partitionKey, Map.of("note", awkward), Map.of("trace", awkward));
            if (events == 2) {
                tx.outbox().publish("payments", partitionKey, Map.of("n", 2));
            }
            return "ok";
        });

        List<Map<String, Object>> rows = db.outboxRows("t1", partitionKey);
        assertEquals(events, rows.size());
        assertEquals(partitionKey, rows.get(0).get("partition_key"));
        assertEquals(awkward, JSON.readTree((String) rows.get(0).get("payload")).get("note").asText());
        assertEquals(awkward, JSON.readTree((String) rows.get(0).get("headers")).get("trace").asText());
        if (events == 2) {
            assertEquals(2, JSON.readTree((String) rows.get(1).get("payload")).get("n").asInt());
            assertEquals(0, JSON.readTree((String) rows.get(1).get("headers")).size());
        }
    }

    /** One event and several take the ordering key's lock the same way. */
    @ParameterizedTest(name = "{0} event(s)")
    @ValueSource(ints = {1, 2})
    void aWriterOfTheSameOrderingKeyWaitsForTheOtherToCommitSoIdsFollowCommitOrder(int events) throws Exception {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        String partitionKey = "order-" + key;
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try (Handle otherWriter = db.jdbi.open()) {
            // Stands for another transaction that has written an event of the same key and not yet committed.
            otherWriter.begin();
            otherWriter.createQuery("SELECT pg_advisory_xact_lock(:space, hashtext(:orderingKey))::text")
                    .bind("space", ExecutorSql.OUTBOX_LOCK_SPACE).bind("orderingKey", "t1/orders/" + partitionKey)
                    .mapTo(String.class).one();

            Future<Outcome<String>> call = callWaitingForTheKeyLock(caller, executor, key, partitionKey, events);
            assertEquals(0, db.outboxEvents("t1", partitionKey));

            otherWriter.commit();
            assertEquals("ok", call.get(30, TimeUnit.SECONDS).result());
            assertEquals(events, db.outboxEvents("t1", partitionKey));
        } finally {
            caller.shutdownNow();
        }
    }

    /**
     * A plain INSERT of the key (migration V8's trigger takes the key's lock) holds the executor back the same
     * way: the trigger's lock is the executor's, the ordering key joined in Java hashing as the one joined in SQL.
     */
    @ParameterizedTest(name = "{0} event(s)")
    @ValueSource(ints = {1, 2})
    void aPlainInsertOfTheSameOrderingKeyHoldsTheExecutorBackUntilItCommits(int events) throws Exception {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();
        // Characters around the joints of the ordering key text: it must be joined the same on both sides.
        String partitionKey = "order/" + key + " \u00e9";
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try (Handle otherWriter = db.jdbi.open()) {
            otherWriter.begin();
            long plainId = otherWriter.createQuery("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) "
                            + "VALUES ('t1', 'orders', :partitionKey, '{}') RETURNING id")
                    .bind("partitionKey", partitionKey).mapTo(Long.class).one();

            Future<Outcome<String>> call = callWaitingForTheKeyLock(caller, executor, key, partitionKey, events);

            otherWriter.commit();
            assertEquals("ok", call.get(30, TimeUnit.SECONDS).result());
            List<Map<String, Object>> rows = db.outboxRows("t1", partitionKey);
            assertEquals(events + 1, rows.size());
            assertEquals(plainId, rows.get(0).get("id"), "the plain INSERT committed first and has the key's lowest id");
        } finally {
            caller.shutdownNow();
        }
    }

    /**
     * Starts a call on {@code caller} that publishes {@code events} events of {@code partitionKey}, and returns
     * once it waits for the key's lock, having drawn no outbox id.
     */
    private static Future<Outcome<String>> callWaitingForTheKeyLock(ExecutorService caller, PostgresIdempotentExecutor executor,
                                                                   String key, String partitionKey, int events)
            throws InterruptedException {
        String idsDrawn = lastOutboxId();
        Future<Outcome<String>> call = caller.submit(() -> executor.run(key, "t1", tx -> {
            for (int n = 1; n <= events; n++) {
                tx.outbox().publish("orders", partitionKey, Map.of("n", n));
            }
            return "ok";
        }));
        LockWaits.awaitAdvisory(db.schema.dataSource(), ExecutorSql.OUTBOX_LOCK_SPACE, 1);
        assertFalse(call.isDone());
        // Ids are drawn after the lock (the sequence has CACHE 1, so each nextval moves it), else they could commit out of order.
        assertEquals(idsDrawn, lastOutboxId(), "the waiting writer drew an outbox id before it held the ordering key's lock");
        return call;
    }

    /** The outbox id sequence's position, which moves with every id drawn. */
    private static String lastOutboxId() {
        return db.jdbi.withHandle(h -> h.createQuery("SELECT last_value || '/' || is_called FROM outbox_events_id_seq")
                .mapTo(String.class).one());
    }

    @Test
    void eventsOfACallbackThatFailsNeverAppear() {
        PostgresIdempotentExecutor executor = db.executor();
        String key = newKey();

        assertThrows(ArithmeticException.class, () -> executor.run(key, "t1", tx -> {
            tx.outbox().publish("payments", key, Map.of("amount", 1));
            return 1 / 0;
        }));

        assertEquals(0, db.outboxEvents("t1", key));
    }

    @Test
    void badEventsAreRefusedByNameAndTheWholeCallRollsBack() {
        PostgresIdempotentExecutor executor = db.executor(c -> c.maxOutboxPayloadBytes(64));
        String key = newKey();

        IllegalArgumentException json = assertThrows(IllegalArgumentException.class,
                () -> executor.run(key, "t1", tx -> {
                    insertPayment(tx, 1);
                    tx.outbox().publishJson("payments", key, "{not json");
                    return "x";
                }));
        IllegalArgumentException topic = assertThrows(IllegalArgumentException.class,
                () -> executor.run(key, "t1", tx -> {
                    tx.outbox().publish(" ", key, Map.of());
                    return "x";
                }));
        IllegalArgumentException partitionKey = assertThrows(IllegalArgumentException.class,
                () -> executor.run(key, "t1", tx -> {
                    tx.outbox().publish("payments", "k".repeat(256), Map.of());
                    return "x";
                }));
        IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                () -> executor.run(key, "t1", tx -> {
                    tx.outbox().publish("payments", key, Map.of("blob", "x".repeat(100)));
                    return "x";
                }));
        IllegalArgumentException header = assertThrows(IllegalArgumentException.class,
                () -> executor.run(key, "t1", tx -> {
                    tx.outbox().publish("payments", key, Map.of(), Map.of("x-trace", "a\nb"));
                    return "x";
                }));

        assertTrue(json.getMessage().startsWith("payload is not valid JSON"), json.getMessage());
        assertTrue(topic.getMessage().startsWith("topic "), topic.getMessage());
        assertTrue(partitionKey.getMessage().startsWith("partitionKey "), partitionKey.getMessage());
        assertTrue(size.getMessage().contains("maxOutboxPayloadBytes"), size.getMessage());
        assertTrue(header.getMessage().startsWith("header x-trace "), header.getMessage());
        assertEquals(0, db.keyRows(key, "t1"));
        assertEquals(0, db.payments(key, "t1"));
        assertEquals(0, db.outboxEvents("t1", key));
    }
}

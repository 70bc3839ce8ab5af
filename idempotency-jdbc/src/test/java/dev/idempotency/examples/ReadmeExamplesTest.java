package dev.idempotency.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.zaxxer.hikari.HikariConfig;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.examples.ReadmeExamples.Charge;
import dev.idempotency.examples.ReadmeExamples.Message;
import dev.idempotency.examples.ReadmeExamples.PaymentRequest;
import dev.idempotency.examples.ReadmeExamples.Receipt;
import dev.idempotency.examples.ReadmeExamples.Started;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.testing.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Runs the README's snippets ({@link ReadmeExamples}) against PostgreSQL, in a database of their
 * own (they use the default schema and a {@code payments} table, as a user's application would),
 * and fails when the README's code blocks differ from them.
 */
class ReadmeExamplesTest {
    private static final Path MODULE = Path.of(System.getProperty("user.dir"));
    private static final Path README = MODULE.getParent().resolve("docs/guide.md");
    private static final Path EXAMPLES = MODULE.resolve("src/test/java/dev/idempotency/examples/ReadmeExamples.java");
    private static final Path PAYMENTS_SQL = MODULE.resolve("src/test/resources/readme/payments.sql");

    private static String database;
    private static Started started;

    @BeforeAll
    static void setUp() throws Exception {
        database = "readme_" + UUID.randomUUID().toString().replace("-", "");
        try (Connection admin = TestDatabase.get().connect(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE DATABASE " + database);
        }
        HikariConfig hikariConfig = new HikariConfig();
        hikariConfig.setJdbcUrl(TestDatabase.get().url().replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + database));
        hikariConfig.setUsername(TestDatabase.get().user());
        hikariConfig.setPassword(TestDatabase.get().password());
        hikariConfig.setMaximumPoolSize(4);
        started = ReadmeExamples.quickStartSetUp(hikariConfig);
        try (Connection connection = started.pool().getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(region(PAYMENTS_SQL, "payments-table"));
            statement.execute("CREATE TABLE shipments (order_id text PRIMARY KEY)");
        }
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (started != null) {
            started.close();
        }
        try (Connection admin = TestDatabase.get().connect(); Statement statement = admin.createStatement()) {
            statement.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        }
    }

    @Test
    void theQuickStartChargesOnceAndReplaysTheReceiptAndTheDecline() {
        String key = "order-" + UUID.randomUUID();
        Map<String, String> headers = new ConcurrentHashMap<>();
        PaymentRequest request = new PaymentRequest("acct-1", 2500);

        Outcome<Receipt> first = ReadmeExamples.quickStartHandler(started.executor(), key, "shop-1", request, headers::put);
        assertEquals("false", headers.get("Idempotent-Replayed"));
        Outcome<Receipt> replay = ReadmeExamples.quickStartHandler(started.executor(), key, "shop-1", request, headers::put);
        assertEquals("true", headers.get("Idempotent-Replayed"));

        String declinedKey = "order-" + UUID.randomUUID();
        PaymentRequest tooMuch = new PaymentRequest("acct-1", 500_000);
        BusinessFailure declined = assertThrows(BusinessFailure.class, () -> ReadmeExamples.quickStartHandler(
                started.executor(), declinedKey, "shop-1", tooMuch, headers::put));
        BusinessFailure declinedAgain = assertThrows(BusinessFailure.class, () -> ReadmeExamples.quickStartHandler(
                started.executor(), declinedKey, "shop-1", tooMuch, headers::put));

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals("captured", replay.result().status());
        assertEquals(1, count("SELECT count(*) FROM payments WHERE id = " + first.result().paymentId()));
        assertEquals(1, count("SELECT count(*) FROM idempotency.outbox_events WHERE partition_key = 'acct-1' "
                + "AND payload ->> 'paymentId' = '" + first.result().paymentId() + "'"));
        assertEquals("card_declined", declined.code());
        assertFalse(declined.replayed());
        assertTrue(declinedAgain.replayed());
        assertEquals(0, count("SELECT count(*) FROM payments WHERE cents = 500000"));
    }

    @Test
    void leaseModeCallsTheCardNetworkOnceAndReplaysTheReceipt() throws IOException {
        String key = "charge-" + UUID.randomUUID();
        AtomicInteger charges = new AtomicInteger();
        List<String> keysSentToTheNetwork = new ArrayList<>();
        ReadmeExamples.CardNetwork cardNetwork = (request, idempotencyKey) -> {
            charges.incrementAndGet();
            keysSentToTheNetwork.add(idempotencyKey);
            return new Charge("ch_" + charges.get(), request.cents());
        };
        PaymentRequest request = new PaymentRequest("acct-2", 4200);

        Outcome<Receipt> first = ReadmeExamples.leaseMode(started.executor(), key, "shop-1", request, cardNetwork);
        Outcome<Receipt> replay = ReadmeExamples.leaseMode(started.executor(), key, "shop-1", request, cardNetwork);

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals(1, charges.get());
        assertEquals(List.of(key), keysSentToTheNetwork);
        assertEquals(1, count("SELECT count(*) FROM payments WHERE charge_id = 'ch_1' AND account = 'acct-2'"));
    }

    @Test
    void theConsumerAppliesARedeliveredMessageOnceAndAcknowledgesBoth() {
        Message message = new Message(UUID.randomUUID().toString(), "shop-1", "order-" + UUID.randomUUID());
        List<String> broker = new ArrayList<>();
        ReadmeExamples.Broker recording = new ReadmeExamples.Broker() {
            @Override
            public void ack() {
                broker.add("ack");
            }

            @Override
            public void nackAndRequeue() {
                broker.add("nack");
            }

            @Override
            public void deadLetter() {
                broker.add("dead-letter");
            }
        };

        Delivery first = ReadmeExamples.consumer(started.executor(), message, recording);
        Delivery redelivered = ReadmeExamples.consumer(started.executor(), message, recording);

        assertEquals(Delivery.Outcome.APPLIED, first.outcome());
        assertEquals(Delivery.Outcome.DUPLICATE, redelivered.outcome());
        assertEquals(List.of("ack", "ack"), broker);
        assertEquals(1, count("SELECT count(*) FROM shipments WHERE order_id = '" + message.orderId() + "'"));
    }

    @Test
    void theBatchConsumerAppliesEachMessageOnceAndAcknowledgesAfterTheCommit() {
        Message message = new Message(UUID.randomUUID().toString(), "shop-1", "order-" + UUID.randomUUID());
        Message other = new Message(UUID.randomUUID().toString(), "shop-1", "order-" + UUID.randomUUID());
        List<String> broker = new ArrayList<>();
        ReadmeExamples.BatchBroker recording = new ReadmeExamples.BatchBroker() {
            @Override
            public void ack(Message acked) {
                broker.add("ack " + acked.orderId());
            }

            @Override
            public void nackAndRequeue(Message nacked) {
                broker.add("nack " + nacked.orderId());
            }

            @Override
            public void deadLetter(Message rejected) {
                broker.add("dead-letter " + rejected.orderId());
            }
        };

        ReadmeExamples.batchConsumer(started.executor(), List.of(message, other, message), recording);
        ReadmeExamples.batchConsumer(started.executor(), List.of(other), recording);

        assertEquals(List.of("ack " + message.orderId(), "ack " + other.orderId(), "ack " + message.orderId(),
                "ack " + other.orderId()), broker);
        assertEquals(1, count("SELECT count(*) FROM shipments WHERE order_id = '" + message.orderId() + "'"));
        assertEquals(1, count("SELECT count(*) FROM shipments WHERE order_id = '" + other.orderId() + "'"));
    }

    @Test
    void theBatchHandlerWritesTheBatchsNewMessagesOnceEachInOneCall() {
        Message message = new Message(UUID.randomUUID().toString(), "shop-1", "order-" + UUID.randomUUID());
        Message other = new Message(UUID.randomUUID().toString(), "shop-1", "order-" + UUID.randomUUID());
        IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(started.executor(), "packing").build();

        List<IdempotentBatchConsumer.Result<Message>> first = ReadmeExamples.batchConsumerAll(consumer,
                List.of(message, other, message));
        List<IdempotentBatchConsumer.Result<Message>> again = ReadmeExamples.batchConsumerAll(consumer, List.of(other));

        assertEquals(List.of(Delivery.Outcome.APPLIED, Delivery.Outcome.APPLIED, Delivery.Outcome.DUPLICATE),
                first.stream().map(result -> result.delivery().outcome()).toList());
        assertEquals(Delivery.Outcome.DUPLICATE, again.get(0).delivery().outcome());
        assertEquals(1, count("SELECT count(*) FROM shipments WHERE order_id = '" + message.orderId() + "'"));
        assertEquals(1, count("SELECT count(*) FROM shipments WHERE order_id = '" + other.orderId() + "'"));
    }

    @Test
    void theReadmeShowsTheCodeTheBuildRuns() throws IOException {
        List<String> blocks = fencedBlocks(Files.readString(README, StandardCharsets.UTF_8));
        Map<String, String> regions = Map.of(
                "payments-table", region(PAYMENTS_SQL, "payments-table"),
                "quickstart", region(EXAMPLES, "quickstart"),
                "lease", region(EXAMPLES, "lease"),
                "consumer", region(EXAMPLES, "consumer"),
                "batch-consumer", region(EXAMPLES, "batch-consumer"),
                "batch-consumer-all", region(EXAMPLES, "batch-consumer-all"));
        regions.forEach((tag, code) -> {
            if (blocks.stream().noneMatch(block -> normalised(block).equals(normalised(code)))) {
                fail("docs/guide.md has no code block equal to the region tagged " + tag + " (whitespace aside). Copy it "
                        + "from the test sources into docs/guide.md, or change both:\n" + code);
            }
        });
    }

    /** The lines between {@code tag::name[]} and {@code end::name[]}, of every such region, in order. */
    static String region(Path file, String tag) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file, e);
        }
        StringBuilder region = new StringBuilder();
        boolean inside = false;
        for (String line : lines) {
            if (line.contains("end::" + tag + "[]")) {
                inside = false;
                region.append('\n');
            } else if (line.contains("tag::" + tag + "[]")) {
                inside = true;
            } else if (inside) {
                region.append(line).append('\n');
            }
        }
        if (region.length() == 0) {
            throw new IllegalStateException("no region tagged " + tag + " in " + file);
        }
        return region.toString();
    }

    private static List<String> fencedBlocks(String markdown) {
        List<String> blocks = new ArrayList<>();
        Matcher matcher = Pattern.compile("(?m)^```[a-z]*\\n(.*?)^```", Pattern.DOTALL).matcher(markdown);
        while (matcher.find()) {
            blocks.add(matcher.group(1));
        }
        return blocks;
    }

    private static String normalised(String code) {
        return code.strip().replaceAll("\\s+", " ");
    }

    private static long count(String sql) {
        try (Connection connection = started.pool().getConnection(); Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}

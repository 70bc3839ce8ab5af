package dev.idempotency.outbox.publisher.rabbitmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.outbox.publisher.FreePorts;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TcpProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Runs against the RabbitMQ at 127.0.0.1:5672 (guest/guest); every queue and exchange has a random name. */
@Timeout(120)
class RabbitMqPublisherTest {
    private static final int BROKER_PORT = 5672;

    private final String suffix = UUID.randomUUID().toString().substring(0, 8);
    private final String queue = "outbox-test-" + suffix;
    private Connection testConnection;
    private Channel test;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @BeforeEach
    void declareQueue() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(BROKER_PORT);
        testConnection = factory.newConnection("outbox-test-" + suffix);
        test = testConnection.createChannel();
        test.queueDeclare(queue, false, false, true, null);
    }

    @AfterEach
    void deleteQueue() throws Exception {
        test.queueDelete(queue);
        testConnection.close();
    }

    @Test
    void publishesPersistentJsonMessagesWithTheEventIdAndRoutingHeadersAsTheBrokerConfirms() throws Exception {
        OutboxEvent order = event(501, queue, "order 7", "{\"total\":12.5}", Map.of("trace-id", "t-1", "Outbox-Tenant", "forged"));
        OutboxEvent refund = event(502, queue, "refund-1", "{\"amount\":3}", Map.of());

        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().build())) {
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED), statuses(publisher.publish(List.of(order, refund))));
        }

        GetResponse first = receive(queue);
        assertEquals(messageId(501), first.getProps().getMessageId());
        assertEquals(2, first.getProps().getDeliveryMode());
        assertEquals("application/json", first.getProps().getContentType());
        assertEquals("{\"total\":12.5}", new String(first.getBody(), StandardCharsets.UTF_8));
        Map<String, Object> headers = first.getProps().getHeaders();
        assertEquals("acme", String.valueOf(headers.get("Outbox-Tenant")));
        assertEquals(queue, String.valueOf(headers.get("Outbox-Topic")));
        assertEquals("order 7", String.valueOf(headers.get("Outbox-Partition-Key")));
        assertEquals("t-1", String.valueOf(headers.get("trace-id")));
        assertEquals(messageId(502), receive(queue).getProps().getMessageId());
    }

    @Test
    void aNamedExchangeRoutesEachEventByItsTopic() throws Exception {
        String exchange = "outbox-test-exchange-" + suffix;
        test.exchangeDeclare(exchange, "direct", false, true, null);
        test.queueBind(queue, exchange, "orders.created");

        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().exchange(exchange).build())) {
            assertEquals(Status.PUBLISHED, publisher.publish(List.of(event(1, "orders.created"))).get(0).status());
        } finally {
            test.exchangeDelete(exchange);
        }

        assertEquals(messageId(1), receive(queue).getProps().getMessageId());
    }

    @Test
    void anEventThatNoQueueReceivesIsRetriedUnlessMandatoryIsOff() {
        String nowhere = "nobody-listens-" + suffix;

        List<PublishResult> mandatory;
        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().build())) {
            mandatory = publisher.publish(List.of(event(1, nowhere), event(2, queue)));
        }
        List<PublishResult> notMandatory;
        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().mandatory(false).build())) {
            notMandatory = publisher.publish(List.of(event(3, nowhere)));
        }

        assertEquals(List.of(Status.RETRY, Status.PUBLISHED), statuses(mandatory));
        assertTrue(mandatory.get(0).error().startsWith("unroutable: no queue received it (312 NO_ROUTE"),
                mandatory.get(0).error());
        assertEquals(List.of(Status.PUBLISHED), statuses(notMandatory));
    }

    @Test
    void anUnroutableEventInTheMiddleOfABigBatchIsRetriedAloneAndEveryOtherIsPublished() throws Exception {
        String nowhere = "nobody-listens-" + suffix;
        List<OutboxEvent> batch = IntStream.rangeClosed(1, 500)
                .mapToObj(id -> event(id, id == 250 ? nowhere : queue)).toList();

        List<PublishResult> results;
        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().build())) {
            results = publisher.publish(batch);
        }

        for (int i = 0; i < batch.size(); i++) {
            assertEquals(i == 249 ? Status.RETRY : Status.PUBLISHED, results.get(i).status(), "event " + (i + 1) + ": " + results.get(i));
        }
        assertTrue(results.get(249).error().contains("NO_ROUTE"), results.get(249).error());
        List<String> received = receiveAll(queue);
        assertEquals(499, received.size());
        assertTrue(!received.contains(messageId(250)));
    }

    @Test
    void whenTheConnectionIsCutUnderABatchEveryEventNotConfirmedIsUnavailableAndEveryPublishedOneIsInTheQueue() throws Exception {
        String kilobyte = "{\"blob\":\"" + "x".repeat(1024) + "\"}";
        List<OutboxEvent> batch = IntStream.rangeClosed(1, 20_000)
                .mapToObj(id -> event(id, queue, "k" + id, kilobyte, Map.of())).toList();

        List<PublishResult> results;
        try (TcpProxy proxy = TcpProxy.to(BROKER_PORT);
             RabbitMqPublisher publisher = new RabbitMqPublisher(config().port(proxy.port()).build())) {
            CompletableFuture<List<PublishResult>> publishing = CompletableFuture.supplyAsync(() -> publisher.publish(batch));
            // Cut once the broker holds part of the batch (or the batch is over).
            Await.until("the broker holds part of the batch", Duration.ofSeconds(60),
                    () -> publishing.isDone() || test.queueDeclarePassive(queue).getMessageCount() > 0);
            proxy.cut();
            results = publishing.get(60, TimeUnit.SECONDS);
        }

        List<String> received = receiveAll(queue);
        for (int i = 0; i < batch.size(); i++) {
            Status status = results.get(i).status();
            assertTrue(status == Status.PUBLISHED || status == Status.UNAVAILABLE, "event " + (i + 1) + ": " + results.get(i));
        }
        Set<String> held = new HashSet<>(received);
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i).status() == Status.PUBLISHED) {
                assertTrue(held.contains(messageId(i + 1)), "event " + (i + 1) + " reported PUBLISHED is in the queue");
            }
        }
    }

    @Test
    void aMissingExchangeIsRetriedAndTheSamePublisherDeliversOnceItExists() throws Exception {
        String exchange = "outbox-test-late-exchange-" + suffix;

        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().exchange(exchange).build())) {
            List<PublishResult> before = publisher.publish(List.of(event(1, "orders"), event(2, "orders")));
            assertEquals(List.of(Status.RETRY, Status.RETRY), statuses(before));
            assertTrue(before.get(0).error().contains("NOT_FOUND - no exchange '" + exchange + "'"), before.get(0).error());

            test.exchangeDeclare(exchange, "direct", false, true, null);
            test.queueBind(queue, exchange, "orders");
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(3, "orders")))));
        } finally {
            test.exchangeDelete(exchange);
        }

        assertEquals(messageId(3), receive(queue).getProps().getMessageId());
    }

    @Test
    void anUnreachableBrokerGivesUnavailableResults() {
        int closedPort = FreePorts.closedPort();

        List<PublishResult> results;
        try (RabbitMqPublisher publisher = new RabbitMqPublisher(config().port(closedPort).build())) {
            results = publisher.publish(List.of(event(1, queue), event(2, queue)));
        }

        assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE), statuses(results));
        assertTrue(results.get(0).error().startsWith("could not connect to RabbitMQ at 127.0.0.1:" + closedPort),
                results.get(0).error());
    }

    @Test
    void afterTheBrokerWentAwayAndCameBackTheNextBatchReconnects() throws Exception {
        try (TcpProxy proxy = TcpProxy.to(BROKER_PORT);
             RabbitMqPublisher publisher = new RabbitMqPublisher(config().port(proxy.port()).build())) {
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(1, queue)))));

            proxy.cut();
            assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE),
                    statuses(publisher.publish(List.of(event(2, queue), event(3, queue)))));

            proxy.restore();
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(4, queue)))));
        }

        List<String> ids = receiveAll(queue);
        assertEquals(messageId(1), ids.get(0));
        assertEquals(messageId(4), ids.get(ids.size() - 1));
    }

    @Test
    void confirmsThatDoNotComeWithinTheTimeoutGiveRetry() throws Exception {
        try (TcpProxy proxy = TcpProxy.to(BROKER_PORT);
             RabbitMqPublisher publisher = new RabbitMqPublisher(config().port(proxy.port())
                     .confirmTimeout(Duration.ofSeconds(1)).build())) {
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(1, queue)))));

            proxy.freeze();
            List<PublishResult> frozen = publisher.publish(List.of(event(2, queue)));
            assertEquals(List.of(Status.RETRY), statuses(frozen));
            assertEquals("no publisher confirm within PT1S", frozen.get(0).error());

            proxy.thaw();
            // The retry of the same event is confirmed; the broker may now hold it twice, which consumers dedupe.
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(2, queue)))));
        }

        assertTrue(receiveAll(queue).containsAll(List.of(messageId(1), messageId(2))));
    }

    @Test
    void aBatchWhoseWritesStallBecauseTheBrokerStoppedReadingEndsUnavailableAndTheNextOneReconnects() {
        String megabyte = "{\"blob\":\"" + "x".repeat(1 << 20) + "\"}";
        List<OutboxEvent> big = IntStream.rangeClosed(1, 64)
                .mapToObj(id -> event(id, queue, "k" + id, megabyte, Map.of())).toList();

        try (TcpProxy proxy = TcpProxy.to(BROKER_PORT);
             RabbitMqPublisher publisher = new RabbitMqPublisher(config().port(proxy.port())
                     .confirmTimeout(Duration.ofSeconds(2)).build())) {
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(99, queue)))));
            proxy.freeze();
            List<PublishResult> stalled = publisher.publish(big);
            assertTrue(statuses(stalled).stream().allMatch(Status.UNAVAILABLE::equals), String.valueOf(stalled));
            assertTrue(stalled.get(big.size() - 1).error().startsWith("not sent: "), stalled.get(big.size() - 1).error());

            proxy.thaw();
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(100, queue)))));
        }
    }

    @Test
    void buildNamesTheSettingItRefuses() {
        assertEquals("host must not be blank", refusal(RabbitMqPublisherConfig.builder().host(" ")));
        assertEquals("port must be between 1 and 65535 (was 70000)", refusal(RabbitMqPublisherConfig.builder()
                .port(70000)));
        assertEquals("confirmTimeout must be between 1ms and 2147483647ms (was PT0S)",
                refusal(RabbitMqPublisherConfig.builder().confirmTimeout(Duration.ZERO)));
        assertTrue(refusal(RabbitMqPublisherConfig.builder()
                .exchange("e".repeat(256))).startsWith("exchange must be a name of at most 255"));
    }

    @Test
    void settingsBuildTheConfigurationAndItsTextHidesThePassword() {
        RabbitMqPublisherConfig config = RabbitMqPublisherConfig.builder()
                .settings(Map.of("host", "rabbit.internal", "tls", "true",
                "username", "relay", "password", "s3cret", "exchange", "events", "mandatory", "false",
                "confirm-timeout", "30s")).build();

        assertEquals(5671, config.port(), "TLS defaults to 5671");
        assertEquals("events", config.exchange());
        assertEquals(Duration.ofSeconds(30), config.confirmTimeout());
        assertTrue(!config.mandatory());
        assertTrue(!config.toString().contains("s3cret"), config.toString());
        assertThrows(IllegalArgumentException.class, () -> RabbitMqPublisherConfig.builder()
                .settings(Map.of("hostname", "x")).build());
    }

    private static RabbitMqPublisherConfig.Builder config() {
        return RabbitMqPublisherConfig.builder().host("127.0.0.1").port(BROKER_PORT)
                .connectTimeout(Duration.ofSeconds(5)).confirmTimeout(Duration.ofSeconds(20));
    }

    private GetResponse receive(String from) {
        AtomicReference<GetResponse> response = new AtomicReference<>();
        Await.until("a message on " + from, () -> {
            response.set(test.basicGet(from, true));
            return response.get() != null;
        });
        return response.get();
    }

    private List<String> receiveAll(String from) throws Exception {
        List<String> ids = new ArrayList<>();
        for (GetResponse response = test.basicGet(from, true); response != null; response = test.basicGet(from, true)) {
            ids.add(response.getProps().getMessageId());
        }
        assertNotNull(ids);
        return ids;
    }

    private static String refusal(RabbitMqPublisherConfig.Builder builder) {
        return assertThrows(IllegalArgumentException.class, builder::build).getMessage();
    }

    private static List<Status> statuses(List<PublishResult> results) {
        return results.stream().map(PublishResult::status).toList();
    }

    private static OutboxEvent event(long id, String topic) {
        return event(id, topic, "key-" + id, "{\"n\":" + id + "}", Map.of());
    }

    private static OutboxEvent event(long id, String topic, String partitionKey, String payload, Map<String, String> headers) {
        return new OutboxEvent(id, messageId(id), "acme", topic, partitionKey, payload, headers, Instant.now(), 1);
    }

    /** A message id unlike the outbox id, so that a test sees which of the two a message carries. */
    static String messageId(long id) {
        return new UUID(0x5eedL, id).toString();
    }
}

package dev.idempotency.outbox.publisher.nats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.outbox.publisher.FreePorts;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TcpProxy;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Runs against the NATS server at 127.0.0.1:4222; each test has its own stream and subjects. */
@Timeout(120)
class NatsJetStreamPublisherTest {
    private static final int SERVER_PORT = 4222;

    private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private final String stream = "OUTBOX_TEST_" + suffix;
    private final String prefix = "outboxtest." + suffix + ".";
    private Connection testConnection;
    private JetStreamManagement management;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireNats();
    }

    @BeforeEach
    void createStream() throws Exception {
        testConnection = Nats.connect("nats://127.0.0.1:" + SERVER_PORT);
        management = testConnection.jetStreamManagement();
        management.addStream(StreamConfiguration.builder().name(stream).subjects(prefix + ">")
                .storageType(StorageType.Memory).duplicateWindow(Duration.ofMinutes(2)).build());
    }

    @AfterEach
    void deleteStream() throws Exception {
        management.deleteStream(stream);
        testConnection.close();
    }

    @Test
    void aBatchPublishedTwiceIsStoredOnceWithTheEventIdAndRoutingHeaders() throws Exception {
        List<OutboxEvent> batch = List.of(
                event(701, "orders", "order 7", "{\"total\":12.5}", Map.of("trace-id", "t-1")),
                event(702, "orders", "order-8", "{\"total\":1}", Map.of()),
                event(703, "refunds", "refund-1", "{\"amount\":3}", Map.of()));

        try (NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config().build())) {
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED), statuses(publisher.publish(batch)));
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED), statuses(publisher.publish(batch)),
                    "a duplicate ack counts as published");
        }

        assertEquals(3, management.getStreamInfo(stream).getStreamState().getMsgCount());
        MessageInfo first = messageWithId(messageId(701));
        assertEquals(prefix + "orders", first.getSubject());
        assertEquals("{\"total\":12.5}", new String(first.getData(), StandardCharsets.UTF_8));
        Headers headers = first.getHeaders();
        assertEquals("acme", headers.getFirst("Outbox-Tenant"));
        assertEquals("orders", headers.getFirst("Outbox-Topic"));
        assertEquals("order%207", headers.getFirst("Outbox-Partition-Key"));
        assertEquals("t-1", headers.getFirst("trace-id"));
        assertEquals(prefix + "refunds", messageWithId(messageId(703)).getSubject());
    }

    @Test
    void eventHeadersThatWouldSteerJetStreamAreNotSent() throws Exception {
        Map<String, String> headers = Map.of("Nats-Rollup", "all", "Nats-Msg-Id", "forged", "X-Good", "ok",
                "X-Accented", "café");

        try (NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config().build())) {
            assertEquals(Status.PUBLISHED,
                    publisher.publish(List.of(event(9, "orders", "k", "{}", headers))).get(0).status());
        }

        Headers stored = messageWithId(messageId(9)).getHeaders();
        assertEquals(List.of(messageId(9)), stored.get("Nats-Msg-Id"));
        assertEquals("ok", stored.getFirst("X-Good"));
        assertEquals(null, stored.get("Nats-Rollup"));
        assertEquals(null, stored.get("X-Accented"));
    }

    @Test
    void aSubjectNoStreamCapturesIsRetriedAndAnInvalidOneIsRejected() {
        List<PublishResult> results;
        try (NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config().subjectPrefix("").build())) {
            results = publisher.publish(List.of(event(1, "no-stream-here." + suffix), event(2, "bad topic")));
        }

        assertEquals(List.of(Status.RETRY, Status.REJECTED), statuses(results));
        assertEquals("IOException: Error Publishing: 503 No Responders Available For Request", results.get(0).error());
        assertTrue(results.get(1).error().startsWith("IllegalArgumentException: Subject cannot contain space"),
                results.get(1).error());
    }

    @Test
    void anEventNoStreamCapturesInTheMiddleOfABigBatchIsRetriedAloneAndEveryOtherIsPublished() throws Exception {
        List<OutboxEvent> batch = new ArrayList<>();
        for (long id = 1; id <= 500; id++) {
            batch.add(event(id, id == 250 ? "no-stream-here." + suffix : prefix + "orders"));
        }

        List<PublishResult> results;
        try (NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config().subjectPrefix("").build())) {
            results = publisher.publish(batch);
        }

        for (int i = 0; i < batch.size(); i++) {
            assertEquals(i == 249 ? Status.RETRY : Status.PUBLISHED, results.get(i).status(), "event " + (i + 1) + ": " + results.get(i));
        }
        assertEquals(499, management.getStreamInfo(stream).getStreamState().getMsgCount());
    }

    @Test
    void anUnreachableServerGivesUnavailableResults() {
        int closedPort = FreePorts.closedPort();

        List<PublishResult> results;
        try (NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config()
                .servers(List.of("nats://127.0.0.1:" + closedPort)).build())) {
            results = publisher.publish(List.of(event(1, "orders"), event(2, "orders")));
        }

        assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE), statuses(results));
        assertTrue(results.get(0).error().startsWith("could not connect to NATS"), results.get(0).error());
    }

    @Test
    void afterTheServerWentAwayAndCameBackPublishingResumes() throws Exception {
        try (TcpProxy proxy = TcpProxy.to(SERVER_PORT);
             NatsJetStreamPublisher publisher = new NatsJetStreamPublisher(config()
                     .servers(List.of("nats://127.0.0.1:" + proxy.port())).ackTimeout(Duration.ofSeconds(2)).build())) {
            assertEquals(List.of(Status.PUBLISHED), statuses(publisher.publish(List.of(event(1, "orders")))));

            proxy.cut();
            // Once the client has seen the connection go (at once, or after one unanswered batch), batches are UNAVAILABLE.
            Status duringCut = publisher.publish(List.of(event(2, "orders"))).get(0).status();
            if (duringCut == Status.RETRY) {
                duringCut = publisher.publish(List.of(event(2, "orders"))).get(0).status();
            }
            assertEquals(Status.UNAVAILABLE, duringCut);

            proxy.restore();
            // The client reconnects in the background; until it has, batches are RETRY.
            Await.until("a batch published after the client reconnected", Duration.ofSeconds(60),
                    () -> publisher.publish(List.of(event(2, "orders"))).get(0).status() == Status.PUBLISHED);
        }

        messageWithId(messageId(2));
    }

    @Test
    void buildNamesTheSettingItRefuses() {
        assertEquals("username and password must be set together",
                refusal(NatsJetStreamPublisherConfig.builder().userInfo("relay", null)));
        assertEquals("set at most one of userInfo, token and credentialsFile",
                refusal(NatsJetStreamPublisherConfig.builder().userInfo("relay", "pw").token("t")));
        assertEquals("subjectPrefix must hold no whitespace, control characters or wildcards (* >) (was 'a.*.')",
                refusal(NatsJetStreamPublisherConfig.builder().subjectPrefix("a.*.")));
        assertEquals("ackTimeout must be between 1ms and 2147483647ms (was PT0S)",
                refusal(NatsJetStreamPublisherConfig.builder().ackTimeout(Duration.ZERO)));
        assertTrue(refusal(NatsJetStreamPublisherConfig.builder()
                .servers(List.of("http://x:1:2"))).startsWith("servers holds an invalid URL"));
    }

    @Test
    void settingsBuildTheConfigurationAndItsTextHidesSecrets() {
        NatsJetStreamPublisherConfig config = NatsJetStreamPublisherConfig.builder().settings(Map.of(
                "servers", "nats://a:4222, nats://b:4222", "username", "relay", "password", "s3cret",
                "subject-prefix", "outbox.", "ack-timeout", "3s")).build();

        assertEquals(List.of("nats://a:4222", "nats://b:4222"), config.servers());
        assertEquals("outbox.orders", config.subjectFor("orders"));
        assertEquals(Duration.ofSeconds(3), config.ackTimeout());
        assertTrue(!config.toString().contains("s3cret"), config.toString());
        assertThrows(IllegalArgumentException.class, () -> NatsJetStreamPublisherConfig.builder()
                .settings(Map.of("server", "x")).build());
    }

    private NatsJetStreamPublisherConfig.Builder config() {
        return NatsJetStreamPublisherConfig.builder().servers(List.of("nats://127.0.0.1:" + SERVER_PORT))
                .subjectPrefix(prefix).ackTimeout(Duration.ofSeconds(20));
    }

    private MessageInfo messageWithId(String id) throws Exception {
        long last = management.getStreamInfo(stream).getStreamState().getLastSequence();
        for (long sequence = 1; sequence <= last; sequence++) {
            MessageInfo message = management.getMessage(stream, sequence);
            if (id.equals(message.getHeaders().getFirst("Nats-Msg-Id"))) {
                return message;
            }
        }
        throw new AssertionError("stream " + stream + " holds no message with Nats-Msg-Id " + id);
    }

    private static String refusal(NatsJetStreamPublisherConfig.Builder builder) {
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

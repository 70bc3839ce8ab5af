package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisherConfig;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisherConfig;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two outboxes (two schemas, as two services or a rebuilt database would have, with the same
 * tenant and topic) relay into one JetStream stream, one RabbitMQ queue and one webhook: every
 * event arrives under a message id of its own, so the stream's duplicate window drops none, and a
 * consumer keyed on the message id applies every event. With outbox ids as message ids, event 1 of
 * one outbox and event 1 of the other were the same message.
 */
@Timeout(120)
class MessageIdAcrossOutboxesTest {
    private static final int EVENTS_PER_OUTBOX = 20;
    private static final String TENANT = "shop-1";
    private static final Pattern UUID_TEXT = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
        Brokers.requireNats();
    }

    @Test
    void twoOutboxesRelayingIntoOneStreamQueueAndWebhookDeliverEveryEventUnderItsOwnMessageId() throws Exception {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        String topic = "msgid-" + suffix;
        String stream = "OUTBOX_MSGID_" + suffix;
        String subjectPrefix = "msgidtest." + suffix + ".";
        List<String> webhookKeys = new CopyOnWriteArrayList<>();
        HttpServer webhook = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        webhook.createContext("/", exchange -> {
            try (exchange) {
                exchange.getRequestBody().readAllBytes();
                webhookKeys.add(exchange.getRequestHeaders().getFirst(HttpWebhookPublisher.IDEMPOTENCY_KEY));
                exchange.sendResponseHeaders(200, -1);
            }
        });
        webhook.start();
        try (OutboxFixture a = OutboxFixture.create("msgid_a");
             OutboxFixture b = OutboxFixture.create("msgid_b");
             OutboxFixture consumerSide = OutboxFixture.create("msgid_consumer");
             io.nats.client.Connection nats = Nats.connect("nats://127.0.0.1:4222");
             Connection rabbit = rabbitConnection();
             Channel setup = rabbit.createChannel()) {
            JetStreamManagement jsm = nats.jetStreamManagement();
            jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subjectPrefix + ">")
                    .storageType(StorageType.Memory).duplicateWindow(Duration.ofMinutes(2)).build());
            setup.queueDeclare(topic, false, false, true, null);
            String webhookUrl = "http://127.0.0.1:" + webhook.getAddress().getPort() + "/hooks";
            try {
                writeEvents(a, topic);
                writeEvents(b, topic);
                Set<String> written = new HashSet<>(messageIds(a));
                written.addAll(messageIds(b));
                assertEquals(2 * EVENTS_PER_OUTBOX, written.size(), "each written event has a message id of its own");
                assertTrue(written.stream().allMatch(id -> UUID_TEXT.matcher(id).matches()), "random UUIDs: " + written);

                try (Publisher toA = everywhere(subjectPrefix, webhookUrl);
                     Publisher toB = everywhere(subjectPrefix, webhookUrl);
                     OutboxRelay relayA = relay(a, toA);
                     OutboxRelay relayB = relay(b, toB)) {
                    relayA.start();
                    relayB.start();
                    Await.until("both outboxes published", Duration.ofSeconds(60),
                            () -> a.count("status = 'published'") == EVENTS_PER_OUTBOX
                                    && b.count("status = 'published'") == EVENTS_PER_OUTBOX);
                }

                Set<String> inStream = new HashSet<>();
                long stored = jsm.getStreamInfo(stream).getStreamState().getMsgCount();
                for (long sequence = 1; sequence <= stored; sequence++) {
                    inStream.add(jsm.getMessage(stream, sequence).getHeaders().getFirst(NatsJetStreamPublisher.MESSAGE_ID_HEADER));
                }
                assertEquals(2 * EVENTS_PER_OUTBOX, stored, "the stream kept every event of both outboxes");
                assertEquals(written, inStream, "the stream holds each event once, under the id stored in its row");
                assertEquals(written, new HashSet<>(webhookKeys), "the webhook saw every event's message id");

                Map<String, Integer> applied = consumeQueue(rabbit, topic, consumerSide);
                assertEquals(written, applied.keySet(), "the queue delivered every event under its message id");
                assertEquals(2 * EVENTS_PER_OUTBOX, consumerSide.number("SELECT count(*) FROM applied"),
                        "the consumer applied every event of both outboxes; none was taken for a duplicate");
            } finally {
                jsm.deleteStream(stream);
            }
        } finally {
            webhook.stop(0);
        }
    }

    /** Events written the way an application writes them: by callbacks of the executor. */
    private static void writeEvents(OutboxFixture outbox, String topic) {
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(outbox.dataSource())
                .config(IdempotencyConfig.builder().schema(outbox.schema()).build()).build();
        for (int n = 0; n < EVENTS_PER_OUTBOX; n++) {
            int order = n;
            executor.run("order-" + order, TENANT, String.class, tx -> {
                tx.outbox().publish(topic, "order-" + order, Map.of("order", order));
                return "ok";
            });
        }
    }

    private static List<String> messageIds(OutboxFixture outbox) {
        List<String> ids = new ArrayList<>();
        for (long id : outbox.longs("SELECT id FROM outbox_events ORDER BY id")) {
            ids.add(outbox.string("SELECT message_id::text FROM outbox_events WHERE id = " + id));
        }
        return ids;
    }

    /** One service's publishers: the stream, the queue (the default exchange routes the topic to it) and the webhook. */
    private static Publisher everywhere(String subjectPrefix, String webhookUrl) {
        return new AllOf(List.of(
                new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder()
                        .servers(List.of("nats://127.0.0.1:4222"))
                        .subjectPrefix(subjectPrefix).build()),
                new RabbitMqPublisher(RabbitMqPublisherConfig.builder().host("127.0.0.1").build()),
                new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder().baseUrl(webhookUrl).build())));
    }

    private static OutboxRelay relay(OutboxFixture outbox, Publisher publisher) {
        return OutboxRelay.builder(outbox.dataSource(), publisher).config(outbox.config(outbox.schema())
                .leaseDuration(Duration.ofSeconds(30)).renewalInterval(Duration.ofSeconds(1))
                .publishTimeout(Duration.ofSeconds(20)).build()).build();
    }

    /** Drains the queue through an {@link IdempotentConsumer}; returns message id to deliveries. */
    private static Map<String, Integer> consumeQueue(Connection rabbit, String queue, OutboxFixture consumerSide)
            throws Exception {
        consumerSide.execute("CREATE TABLE applied (message_id text NOT NULL)");
        IdempotentConsumer<PostgresTransaction> consumer = IdempotentConsumer.builder(
                PostgresIdempotentExecutor.builder(consumerSide.dataSource())
                        .config(IdempotencyConfig.builder().schema(consumerSide.schema()).build()).build(),
                "projector").build();
        Map<String, Integer> deliveries = new ConcurrentHashMap<>();
        try (Channel channel = rabbit.createChannel()) {
            for (var got = channel.basicGet(queue, false); got != null; got = channel.basicGet(queue, false)) {
                String messageId = got.getProps().getMessageId();
                String tenant = String.valueOf(got.getProps().getHeaders().get(OutboxHeaders.TENANT));
                deliveries.merge(messageId, 1, Integer::sum);
                Delivery delivery = consumer.consume(messageId, tenant, tx -> tx.handle()
                        .createUpdate("INSERT INTO applied (message_id) VALUES (:m)").bind("m", messageId).execute());
                assertTrue(delivery.acknowledge(), delivery::toString);
                channel.basicAck(got.getEnvelope().getDeliveryTag(), false);
            }
        }
        return deliveries;
    }

    private static Connection rabbitConnection() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        return factory.newConnection("msgid-test");
    }

    /** Sends each batch to every publisher in turn; an event is published when all of them published it. */
    private record AllOf(List<Publisher> publishers) implements Publisher {
        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            List<PublishResult> combined = new ArrayList<>(publishers.get(0).publish(events));
            for (Publisher publisher : publishers.subList(1, publishers.size())) {
                List<PublishResult> results = publisher.publish(events);
                for (int i = 0; i < events.size(); i++) {
                    if (combined.get(i).status() == PublishResult.Status.PUBLISHED) {
                        combined.set(i, results.get(i));
                    }
                }
            }
            return combined;
        }

        @Override
        public void close() {
            publishers.forEach(Publisher::close);
        }
    }
}

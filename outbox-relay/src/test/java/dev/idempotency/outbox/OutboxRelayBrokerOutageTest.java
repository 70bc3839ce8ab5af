package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TcpProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * RabbitMQ (127.0.0.1:5672) goes away, behind a proxy, for far longer than maxAttempts x backoff:
 * the relay pauses as a whole instead of spending the events' attempts, and resumes in order.
 */
@Timeout(60)
class OutboxRelayBrokerOutageTest {
    private static final Pattern PAYLOAD = Pattern.compile("\\{\"key\": ?\"([^\"]+)\", ?\"seq\": ?(\\d+)\\}");

    private final String queue = "outbox-outage-" + UUID.randomUUID().toString().substring(0, 8);
    private final String instance = "outage-" + UUID.randomUUID().toString().substring(0, 8);
    private final ListAppender<ILoggingEvent> outageLog = new ListAppender<>();
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private Connection testConnection;
    private Channel test;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @BeforeEach
    void setUp() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(5672);
        testConnection = factory.newConnection(queue);
        test = testConnection.createChannel();
        test.queueDeclare(queue, false, false, true, null);
        outageLog.start();
        ((Logger) LoggerFactory.getLogger(PublisherOutage.class)).addAppender(outageLog);
    }

    @AfterEach
    void tearDown() throws Exception {
        ((Logger) LoggerFactory.getLogger(PublisherOutage.class)).detachAppender(outageLog);
        test.queueDelete(queue);
        testConnection.close();
    }

    @Test
    void aCutLongerThanMaxAttemptsTimesBackoffDeadLettersNothingCountsNoAttemptAndResumesInOrder() throws Exception {
        try (TcpProxy proxy = TcpProxy.to(5672);
             RabbitMqPublisher publisher = new RabbitMqPublisher(RabbitMqPublisherConfig.builder().host("127.0.0.1")
                     .port(proxy.port()).connectTimeout(Duration.ofSeconds(1))
                     .confirmTimeout(Duration.ofSeconds(2)).build());
             HikariDataSource pool = outbox.newPool(3);
             OutboxRelay relay = OutboxRelay.builder(pool, publisher).config(outbox.config(instance)
                     .leaseDuration(Duration.ofSeconds(8)).publishTimeout(Duration.ofSeconds(4))
                     .maxAttempts(2).backoffBase(Duration.ofMillis(100)).backoffMax(Duration.ofMillis(300)).build()).build()) {
            relay.start();
            long before = insert("warm-up", 0);
            outbox.awaitStatus(List.of(before), "published", Duration.ofSeconds(20));

            proxy.cut();
            List<Long> held = new ArrayList<>();
            for (int seq = 1; seq <= 6; seq++) {
                for (int key = 0; key < 5; key++) {
                    held.add(insert("key-" + key, seq));
                }
            }
            relay.wakeUp();
            // 4 s cut: 2 attempts x at most 300 ms backoff would have dead-lettered every key's head many times over.
            Thread.sleep(4_000);
            assertEquals(0, outbox.count("status = 'dead'"), "no dead letters during the outage");
            assertEquals(0, outbox.count("attempts > 0"), "no attempt counted against any held event");
            assertEquals(held.size(), outbox.count("status = 'pending'"), "every held event waits");

            proxy.restore();
            outbox.awaitStatus(held, "published", Duration.ofSeconds(30));
            assertEquals(0, outbox.count("status = 'dead'"));
        }

        Map<String, List<Integer>> firstArrivals = firstArrivalsByKey();
        assertEquals(6, firstArrivals.size(), "the warm-up key and five keys arrived");
        for (int key = 0; key < 5; key++) {
            assertEquals(List.of(1, 2, 3, 4, 5, 6), firstArrivals.get("key-" + key), "per-key order of key-" + key);
        }
        List<ILoggingEvent> lines = outageLog.list.stream()
                .filter(e -> e.getFormattedMessage().contains("relay " + instance + ":")).toList();
        assertEquals(2, lines.size(), "one line when the outage starts, one when it ends: " + lines);
        assertEquals(Level.WARN, lines.get(0).getLevel());
        assertTrue(lines.get(0).getFormattedMessage().contains("the broker is unavailable"), lines.get(0).getFormattedMessage());
        assertTrue(lines.get(0).getFormattedMessage().contains("RabbitMQ"), "names the error: " + lines.get(0).getFormattedMessage());
        assertEquals(Level.INFO, lines.get(1).getLevel());
        Matcher duration = Pattern.compile("available again after (\\d+) ms").matcher(lines.get(1).getFormattedMessage());
        assertTrue(duration.find(), lines.get(1).getFormattedMessage());
        assertTrue(Long.parseLong(duration.group(1)) >= 3_500, "the outage lasted the cut: " + lines.get(1).getFormattedMessage());
    }

    private long insert(String key, int seq) {
        return outbox.insert("t", queue, key, "{\"key\": \"" + key + "\", \"seq\": " + seq + "}");
    }

    /** Every message on the queue, keeping each (key, seq) once, in arrival order per key. */
    private Map<String, List<Integer>> firstArrivalsByKey() throws Exception {
        Map<String, List<Integer>> byKey = new LinkedHashMap<>();
        for (GetResponse r = test.basicGet(queue, true); r != null; r = test.basicGet(queue, true)) {
            Matcher m = PAYLOAD.matcher(new String(r.getBody(), StandardCharsets.UTF_8));
            assertTrue(m.matches(), new String(r.getBody(), StandardCharsets.UTF_8));
            List<Integer> seqs = byKey.computeIfAbsent(m.group(1), k -> new ArrayList<>());
            int seq = Integer.parseInt(m.group(2));
            if (!seqs.contains(seq)) {
                seqs.add(seq);
            }
        }
        return byKey;
    }
}

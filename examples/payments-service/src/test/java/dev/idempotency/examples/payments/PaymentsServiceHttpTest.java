package dev.idempotency.examples.payments;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idempotency.spring.boot.RelayLifecycle;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.springframework.beans.factory.annotation.Autowired;
import javax.sql.DataSource;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The example service started for real on a random port, against the real PostgreSQL (in a schema of
 * its own) and RabbitMQ, called with java.net.http.HttpClient: what a client of a keyed endpoint sees.
 */
// Starts a Spring application in this JVM, as the other test class does: each one's LogbackMetrics adds a listener to
// logback's one LoggerContext, whose list is not thread-safe, and two starting at once failed (ArrayIndexOutOfBounds).
@ResourceLock("logback LoggerContext")
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class PaymentsServiceHttpTest {
    static final String SCHEMA = "payments_http_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String QUEUE = "payments-created-" + UUID.randomUUID();
    static final String BODY = "{\"payer\":\"alice\",\"amount\":1250,\"currency\":\"EUR\"}";

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        TestDatabase database = TestDatabase.get();
        registry.add("spring.datasource.url", database::url);
        registry.add("spring.datasource.username", () -> database.user() == null ? "postgres" : database.user());
        registry.add("spring.datasource.hikari.schema", () -> SCHEMA);
        registry.add("spring.flyway.schemas", () -> SCHEMA);
        registry.add("spring.flyway.default-schema", () -> SCHEMA);
        registry.add("idempotency.schema", () -> SCHEMA);
        registry.add("payments.topic", () -> QUEUE);
    }

    @BeforeAll
    static void queue() throws Exception {
        Brokers.requireRabbitMq();
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            channel.queueDeclare(QUEUE, false, false, false, null);
        }
    }

    @AfterAll
    static void deleteTheQueue() throws Exception {
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            channel.queueDelete(QUEUE);
        }
    }

    /** Drops the test's schema when the context closes: after the relay and the sweeper stopped, before the pool closes. */
    @TestConfiguration
    static class DropSchemaOnClose {
        @Bean
        DisposableBean dropTestSchema(DataSource dataSource) {
            return () -> TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
    }

    static ConnectionFactory rabbit() {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(Brokers.RABBITMQ_PORT);
        return factory;
    }

    @LocalServerPort
    int port;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    RelayLifecycle relay;

    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    HttpResponse<byte[]> post(String path, String key, String body, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    static String unquoted(String key) {
        return key.substring(1, key.length() - 1);
    }

    int count(String sql, Object... args) {
        return jdbc.queryForObject(sql, Integer.class, args);
    }

    int payments(String key) {
        return count("SELECT count(*) FROM payments WHERE request_key = ?", unquoted(key));
    }

    int keys(String key) {
        return count("SELECT count(*) FROM " + SCHEMA + ".idempotency_keys WHERE idempotency_key = ?", unquoted(key));
    }

    int events(String key) {
        return count("SELECT count(*) FROM " + SCHEMA + ".outbox_events e JOIN payments p "
                + "ON (e.payload->>'paymentId')::bigint = p.id WHERE p.request_key = ?", unquoted(key));
    }

    int audits(String key) {
        return count("SELECT count(*) FROM payment_audit a JOIN payments p ON a.payment_id = p.id "
                + "WHERE p.request_key = ?", unquoted(key));
    }

    static String text(HttpResponse<byte[]> response) {
        return new String(response.body(), StandardCharsets.UTF_8);
    }

    @Test
    void sixtyFourConcurrentIdenticalRequestsMakeOnePaymentOneEventAndIdenticalResponses() throws Exception {
        String key = key();
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<HttpResponse<byte[]>>> futures = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return post("/payments", key, BODY);
                }));
            }
            start.countDown();
            List<HttpResponse<byte[]>> responses = new ArrayList<>();
            for (Future<HttpResponse<byte[]>> future : futures) {
                responses.add(future.get());
            }
            List<HttpResponse<byte[]>> created = responses.stream().filter(r -> r.statusCode() == 201).toList();
            List<HttpResponse<byte[]>> firstRuns = created.stream()
                    .filter(r -> r.headers().firstValue("Idempotent-Replayed").equals(java.util.Optional.of("false"))).toList();
            assertThat(firstRuns).hasSize(1);
            byte[] first = firstRuns.get(0).body();
            String location = firstRuns.get(0).headers().firstValue("Location").orElseThrow();
            for (HttpResponse<byte[]> response : responses) {
                if (response.statusCode() == 409) {
                    assertThat(response.headers().firstValue("Retry-After")).isPresent();
                    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
                    continue;
                }
                assertThat(response.statusCode()).isEqualTo(201);
                assertThat(response.body()).isEqualTo(first);
                assertThat(response.headers().firstValue("Location")).hasValue(location);
                if (response != firstRuns.get(0)) {
                    assertThat(response.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                }
            }
            assertThat(created.size()).isGreaterThan(1);
            System.out.printf("64 concurrent requests with one key: %d x 201 (1 first run), %d x 409%n", created.size(),
                    responses.size() - created.size());
        } finally {
            pool.shutdownNow();
        }
        assertThat(payments(key)).isEqualTo(1);
        assertThat(audits(key)).isEqualTo(1);
        assertThat(events(key)).isEqualTo(1);
        // A later retry is a replay, byte for byte.
        HttpResponse<byte[]> later = post("/payments", key, BODY);
        assertThat(later.statusCode()).isEqualTo(201);
        assertThat(later.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    void theSameKeyWithAnotherBodyIs422ProblemAndWritesNothing() throws Exception {
        String key = key();
        assertThat(post("/payments", key, BODY).statusCode()).isEqualTo(201);
        HttpResponse<byte[]> reused = post("/payments", key, BODY.replace("1250", "9999"));
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(text(reused)).contains("\"status\":422");
        assertThat(payments(key)).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM payments WHERE amount = 9999")).isZero();
    }

    @Test
    void aMissingOrMalformedKeyIs400ProblemAndNothingRuns() throws Exception {
        int before = count("SELECT count(*) FROM payments");
        HttpResponse<byte[]> missing = post("/payments", null, BODY);
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(missing.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        // Two words: neither an unquoted key nor a Structured Field String.
        HttpResponse<byte[]> malformed = post("/payments", "not a key", BODY);
        assertThat(malformed.statusCode()).isEqualTo(400);
        HttpResponse<byte[]> list = post("/payments", "\"a\", \"b\"", BODY);
        assertThat(list.statusCode()).isEqualTo(400);
        // The annotated endpoint outside idempotency.http.paths needs one too.
        assertThat(post("/refunds", null, "{\"paymentId\":1}").statusCode()).isEqualTo(400);
        assertThat(count("SELECT count(*) FROM payments")).isEqualTo(before);
    }

    @Test
    void theAnnotatedEndpointRunsOnceAndReplays() throws Exception {
        String key = key();
        HttpResponse<byte[]> first = post("/refunds", key, "{\"paymentId\":7}");
        HttpResponse<byte[]> again = post("/refunds", key, "{\"paymentId\":7}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(keys(key)).isEqualTo(1);
    }

    @Test
    void aControllerThatThrowsAfterWritingLeavesNoPaymentKeyOrEventAndTheRetrySucceeds() throws Exception {
        String key = key();
        HttpResponse<byte[]> failed = post("/payments", key, BODY, "X-Fail-After-Write", "true");
        assertThat(failed.statusCode()).isGreaterThanOrEqualTo(500);
        assertThat(payments(key)).isZero();
        assertThat(keys(key)).isZero();
        assertThat(count("SELECT count(*) FROM payment_audit a WHERE NOT EXISTS "
                + "(SELECT 1 FROM payments p WHERE p.id = a.payment_id)")).isZero();
        int eventsBefore = count("SELECT count(*) FROM " + SCHEMA + ".outbox_events");

        HttpResponse<byte[]> retry = post("/payments", key, BODY);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("false");
        assertThat(payments(key)).isEqualTo(1);
        // JPA (payments) and JdbcTemplate (payment_audit) wrote in the key's transaction, and both committed.
        assertThat(audits(key)).isEqualTo(1);
        assertThat(keys(key)).isEqualTo(1);
        assertThat(events(key)).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".outbox_events")).isEqualTo(eventsBefore + 1);
    }

    @Test
    void aDeclinedPaymentIsStoredAndReplayedAsItWas() throws Exception {
        String key = key();
        String big = BODY.replace("1250", Long.toString(PaymentsController.LIMIT + 1));
        HttpResponse<byte[]> declined = post("/payments", key, big);
        HttpResponse<byte[]> replay = post("/payments", key, big);
        assertThat(declined.statusCode()).isEqualTo(402);
        assertThat(declined.headers().firstValue("Idempotent-Replayed")).hasValue("false");
        assertThat(replay.statusCode()).isEqualTo(402);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(replay.body()).isEqualTo(declined.body());
        assertThat(keys(key)).isEqualTo(1);
        assertThat(payments(key)).isZero();
    }

    @Test
    void theRelayBeanPublishesThePaymentEventsToRabbitMq() throws Exception {
        assertThat(relay.isRunning()).isTrue();
        String key = key();
        HttpResponse<byte[]> created = post("/payments", key, BODY.replace("alice", "relay-check"));
        assertThat(created.statusCode()).isEqualTo(201);
        long paymentId = jdbc.queryForObject("SELECT id FROM payments WHERE request_key = ?", Long.class, unquoted(key));
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            Await.until("payment " + paymentId + "'s event on the queue", Duration.ofSeconds(15), () -> {
                GetResponse message = channel.basicGet(QUEUE, true);
                if (message == null) {
                    return false;
                }
                String body = new String(message.getBody(), StandardCharsets.UTF_8).replace(" ", "");
                // jsonb's text form: {"amount": 1250, "currency": "EUR", "paymentId": 3}
                boolean ours = body.contains("\"paymentId\":" + paymentId + ",") || body.contains("\"paymentId\":" + paymentId + "}");
                if (ours) {
                    assertThat(message.getProps().getMessageId()).isNotBlank();
                }
                return ours;
            });
        }
        // The relay writes its position after the publication (at most positionWriteInterval later).
        String published = "SELECT count(*) FROM " + SCHEMA + ".outbox_events e JOIN " + SCHEMA + ".outbox_event_states s"
                + " ON s.id = e.id WHERE s.status = 'published' AND (e.payload->>'paymentId')::bigint = ?";
        Await.until("payment " + paymentId + "'s event marked published", Duration.ofSeconds(5),
                () -> count(published, paymentId) > 0);
        assertThat(count(published, paymentId)).isEqualTo(1);
    }

}

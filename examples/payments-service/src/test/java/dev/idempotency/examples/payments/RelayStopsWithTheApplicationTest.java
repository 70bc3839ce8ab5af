package dev.idempotency.examples.payments;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.spring.boot.RelayLifecycle;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The example started and closed by hand, as a deployment would: closing the application stops the
 * relay gracefully, after it published what was committed (it deregisters and releases its partitions).
 */
// Starts a Spring application in this JVM, as the other test class does: each one's LogbackMetrics adds a listener to
// logback's one LoggerContext, whose list is not thread-safe, and two starting at once failed (ArrayIndexOutOfBounds).
@ResourceLock("logback LoggerContext")
class RelayStopsWithTheApplicationTest {
    final String schema = "payments_stop_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    final String queue = "payments-stop-" + UUID.randomUUID();

    @AfterEach
    void cleanUp() throws Exception {
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            channel.queueDelete(queue);
        }
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }

    static ConnectionFactory rabbit() {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(Brokers.RABBITMQ_PORT);
        return factory;
    }

    int count(String sql) throws Exception {
        try (java.sql.Connection connection = TestDatabase.get().connect();
             Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery(sql)) {
            result.next();
            return result.getInt(1);
        }
    }

    @Test
    void closingTheApplicationStopsTheRelayAfterItPublishedAndReleasedItsPartitions() throws Exception {
        Brokers.requireRabbitMq();
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            channel.queueDeclare(queue, false, false, false, null);
        }
        TestDatabase database = TestDatabase.get();
        ConfigurableApplicationContext application = new SpringApplicationBuilder(PaymentsApplication.class)
                // Arguments, not default properties: those would lose to application.yml.
                .run("--server.port=0", "--spring.datasource.url=" + database.url(),
                        "--spring.datasource.hikari.schema=" + schema, "--spring.flyway.schemas=" + schema,
                        "--spring.flyway.default-schema=" + schema, "--idempotency.schema=" + schema,
                        "--payments.topic=" + queue);
        RelayLifecycle relay = application.getBean(RelayLifecycle.class);
        String instance = relay.relay().orElseThrow().instanceId();
        int port = Integer.parseInt(application.getEnvironment().getProperty("local.server.port"));
        HttpResponse<String> created = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                        .timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/json")
                        .header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"payer\":\"bob\",\"amount\":5,\"currency\":\"EUR\"}"))
                        .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(created.statusCode()).isEqualTo(201);
        Await.until("the payment's event published", Duration.ofSeconds(15),
                () -> count("SELECT count(*) FROM " + schema + ".outbox_event_states WHERE status = 'published'") > 0);
        assertThat(count("SELECT count(*) FROM " + schema + ".outbox_relay_partitions WHERE owner_id = '" + instance + "'"))
                .isPositive();

        application.close();

        assertThat(relay.isRunning()).isFalse();
        assertThat(count("SELECT count(*) FROM " + schema + ".outbox_event_states WHERE status = 'published'")).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + schema + ".outbox_relay_instances WHERE instance_id = '" + instance + "'"))
                .isZero();
        assertThat(count("SELECT count(*) FROM " + schema + ".outbox_relay_partitions WHERE owner_id = '" + instance + "'"))
                .isZero();
        try (Connection connection = rabbit().newConnection(); Channel channel = connection.createChannel()) {
            assertThat(channel.messageCount(queue)).isEqualTo(1);
        }
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisherConfig;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisherConfig;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisherConfig;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay's bound on one publish call comes from the publisher's own time limit: it never gives up
 * on a call the publisher would still complete, and a configuration where the two disagree is refused.
 */
@Timeout(60)
class OutboxRelayPublishTimeoutTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();

    @Test
    void aWebhookAnsweringAfter12sWithinItsRequestTimeoutIsDeliveredOnceAndCountedPublished() throws Exception {
        AtomicInteger received = new AtomicInteger();
        HttpServer webhook = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        webhook.setExecutor(Executors.newCachedThreadPool());
        webhook.createContext("/", exchange -> {
            try (exchange) {
                exchange.getRequestBody().readAllBytes();
                received.incrementAndGet();
                try {
                    Thread.sleep(12_000); // time itself: the answer after 12 s, within the 20 s request timeout
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                exchange.sendResponseHeaders(200, -1);
            }
        });
        webhook.start();
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                .baseUrl("http://127.0.0.1:" + webhook.getAddress().getPort() + "/hooks")
                .requestTimeout(Duration.ofSeconds(20)).build());
             HikariDataSource pool = outbox.newPool(3);
             // No publishTimeout: the relay derives it from the publisher (5 s connect + 20 s request + margin).
             OutboxRelay relay = OutboxRelay.builder(pool, publisher)
                     .config(relaySettings().leaseDuration(Duration.ofSeconds(40)).build()).build()) {
            relay.start();
            long id = outbox.insert("t", "orders", "order-1", "{\"n\":1}");
            outbox.awaitStatus(List.of(id), "published", Duration.ofSeconds(30));

            assertEquals(0, outbox.attempts(id), "published at the first attempt, no failure recorded");
            Thread.sleep(500); // time itself: a second delivery would arrive within it
            assertEquals(1, received.get(), "the webhook received the event once");
        } finally {
            webhook.stop(0);
        }
    }

    @Test
    void anExplicitPublishTimeoutShorterThanThePublishersOwnLimitIsRefusedAtStartNamingBoth() {
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                .baseUrl("http://127.0.0.1:1/hooks").requestTimeout(Duration.ofSeconds(20)).build())) {
            String message = assertThrows(IllegalArgumentException.class, () -> OutboxRelay.builder(outbox.dataSource(), publisher)
                    .config(relaySettings().leaseDuration(Duration.ofSeconds(60))
                            .publishTimeout(Duration.ofSeconds(10)).build()).build()).getMessage();

            assertTrue(message.startsWith("publishTimeout (--publish-timeout, PT10S) is shorter than the publisher's own"
                    + " limit on one call (HttpWebhookPublisher.maxCallDuration() = PT25S"), message);
            assertTrue(message.contains("at least PT27.5S"), message);
        }
    }

    @Test
    void aLeaseTooShortForThePublishersLimitIsRefusedAtStart() {
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                .baseUrl("http://127.0.0.1:1/hooks").requestTimeout(Duration.ofSeconds(20)).build())) {
            String message = assertThrows(IllegalArgumentException.class, () -> OutboxRelay.builder(outbox.dataSource(), publisher)
                    .config(relaySettings().build()).build()).getMessage();

            assertTrue(message.startsWith("leaseDuration (PT30S) must be at least renewalInterval (PT1S) + publishTimeout"
                    + " (PT27.5S)"), message);
            assertTrue(message.contains("derived from the publisher's own limit"), message);
        }
    }

    @Test
    void everyBuiltInPublisherWithItsDefaultsFitsTheRelaysDefaultLease() {
        List<Publisher> publishers = List.of(
                new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                        .baseUrl("http://127.0.0.1:1/hooks").build()),
                new RabbitMqPublisher(RabbitMqPublisherConfig.builder().build()),
                new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder().build()),
                new KafkaPublisher(KafkaPublisherConfig.builder().bootstrapServers("127.0.0.1:1").build()));
        try {
            for (Publisher publisher : publishers) {
                OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), publisher)
                        .config(OutboxRelayConfig.builder().schema(outbox.schema()).build()).build();
                relay.close();
                Duration limit = publisher.maxCallDuration().orElseThrow();
                assertTrue(limit.compareTo(OutboxRelayConfig.builder().build().publishTimeout().multipliedBy(2)) <= 0,
                        publisher.getClass().getSimpleName() + " declares " + limit);
            }
        } finally {
            publishers.forEach(Publisher::close);
        }
    }

    private OutboxRelayConfig.Builder relaySettings() {
        return OutboxRelayConfig.builder().schema(outbox.schema()).instanceId("timeout-" + System.nanoTime())
                .partitions(8).renewalInterval(Duration.ofSeconds(1)).idlePollMax(Duration.ofMillis(100));
    }
}

package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisherConfig;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisherConfig;
import dev.idempotency.testing.Brokers;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * What an operator sees when a real broker refuses events: a RabbitMQ NO_ROUTE (retried until the
 * attempts run out) and an HTTP 400 (rejected at once) each give WARN lines naming the event, its
 * message id, topic and error code; twenty failed attempts of one topic give one line, not twenty;
 * and the payload, which the webhook echoes into the event's last_error, appears in no log line.
 */
@Timeout(60)
class RelayFailureLoggingTest {
    private static final int MAX_ATTEMPTS = 20;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireRabbitMq();
    }

    @Test
    void noRouteAndHttp400AppearInWarnLinesWithEventIdAndTopicRateLimitedAndWithoutThePayload() throws Exception {
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String sentinel = "SENTINEL-" + UUID.randomUUID();
        String payload = "{\"card\":\"" + sentinel + "\"}";
        String unroutedTopic = "no-such-queue-" + suffix;
        String hookTopic = "hook-" + suffix;
        HttpServer webhook = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        webhook.createContext("/", exchange -> {
            try (exchange) {
                // A receiver that quotes the request in its error: the text reaches last_error, never a log line.
                byte[] echo = ("invalid order " + new String(exchange.getRequestBody().readAllBytes())).getBytes();
                exchange.sendResponseHeaders(400, echo.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(echo);
                }
            }
        });
        webhook.start();
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.start();
        root.addAppender(captured);
        try (OutboxFixture outbox = OutboxFixture.create("failure_log");
             Publisher publisher = new ByTopic(hookTopic,
                     new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                             .baseUrl("http://127.0.0.1:" + webhook.getAddress().getPort() + "/hooks").build()),
                     new RabbitMqPublisher(RabbitMqPublisherConfig.builder().host("127.0.0.1").build()))) {
            long unrouted = outbox.insert("shop", unroutedTopic, "order-1", payload);
            long rejected = outbox.insert("shop", hookTopic, "order-2", payload);
            String unroutedMessageId = outbox.string("SELECT message_id::text FROM outbox_events WHERE id = " + unrouted);
            String rejectedMessageId = outbox.string("SELECT message_id::text FROM outbox_events WHERE id = " + rejected);

            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), publisher).config(outbox.config("failing")
                    .maxAttempts(MAX_ATTEMPTS).backoffBase(Duration.ofMillis(5)).backoffMax(Duration.ofMillis(20)).build()).build()) {
                relay.start();
                outbox.awaitStatus(List.of(unrouted, rejected), "dead", Duration.ofSeconds(40));
            }

            assertTrue(outbox.lastError(rejected).contains(sentinel), "the receiver's answer quoted the payload");
            List<String> failureLines = warnings(captured, RelayFailureLog.class.getName());
            List<String> attemptLines = failureLines.stream()
                    .filter(l -> l.contains("publishing outbox event") && l.contains("topic " + unroutedTopic)).toList();
            assertEquals(List.of("relay failing: publishing outbox event " + unrouted + " (message id " + unroutedMessageId
                    + ", topic " + unroutedTopic + ", attempt 1) failed: unroutable 312 NO_ROUTE; it will be retried"),
                    attemptLines, (MAX_ATTEMPTS - 1) + " failed attempts within the interval give one line");
            assertTrue(failureLines.contains("relay failing: dead-lettered outbox event " + unrouted + " (message id "
                    + unroutedMessageId + ", topic " + unroutedTopic + ", attempts " + MAX_ATTEMPTS + "): out of attempts,"
                    + " last error unroutable 312 NO_ROUTE; list and requeue dead letters with OutboxDeadLetters or the"
                    + " dead-letters command"), failureLines::toString);
            assertTrue(failureLines.contains("relay failing: dead-lettered outbox event " + rejected + " (message id "
                    + rejectedMessageId + ", topic " + hookTopic + ", attempts 1): rejected by the publisher, last error"
                    + " HTTP 400; list and requeue dead letters with OutboxDeadLetters or the dead-letters command"),
                    failureLines::toString);
            assertEquals(List.of(unroutedMessageId, rejectedMessageId),
                    OutboxDeadLetters.builder(outbox.dataSource()).schema(outbox.schema()).build().list(10).stream()
                            .map(OutboxDeadLetter::messageId).toList(), "operators see each dead letter's message id");
            List<String> leaks = everything(captured).stream().filter(l -> l.contains(sentinel)).toList();
            assertEquals(List.of(), leaks, "no captured log line (INFO and up, any logger) carries the payload");
        } finally {
            root.detachAppender(captured);
            webhook.stop(0);
        }
    }

    private static List<String> warnings(ListAppender<ILoggingEvent> captured, String logger) {
        return captured.list.stream()
                .filter(e -> e.getLoggerName().equals(logger) && e.getLevel() == ch.qos.logback.classic.Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).toList();
    }

    private static List<String> everything(ListAppender<ILoggingEvent> captured) {
        List<String> texts = new ArrayList<>();
        for (ILoggingEvent event : List.copyOf(captured.list)) {
            texts.add(event.getFormattedMessage());
            for (IThrowableProxy t = event.getThrowableProxy(); t != null; t = t.getCause()) {
                texts.add(t.getMessage());
            }
        }
        texts.removeIf(t -> t == null);
        return texts;
    }

    /** Events of one topic go to the webhook, all others to RabbitMQ. */
    private record ByTopic(String webhookTopic, Publisher webhook, Publisher rabbit) implements Publisher {
        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            List<PublishResult> results = new ArrayList<>();
            for (OutboxEvent event : events) {
                results.add((event.topic().equals(webhookTopic) ? webhook : rabbit).publish(List.of(event)).get(0));
            }
            return results;
        }

        @Override
        public void close() {
            webhook.close();
            rabbit.close();
        }
    }
}

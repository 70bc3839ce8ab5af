package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The operator's lines about failed attempts, dead letters and outages: what they say, and how often. */
class RelayFailureLogTest {
    private static final String SENTINEL = "SENTINEL-4111-1111";
    private static final String PAYLOAD = "{\"card\":\"" + SENTINEL + "\"}";

    private final AtomicLong clock = new AtomicLong();
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private final RelayFailureLog failures = new RelayFailureLog("relay-1", Duration.ofSeconds(60), clock::get, logger());

    private Logger logger() {
        Logger logger = new LoggerContext().getLogger("failures");
        logger.setLevel(Level.INFO);
        lines.start();
        logger.addAppender(lines);
        return logger;
    }

    @Test
    void aFailedAttemptIsLoggedAtWarnWithEventIdMessageIdTopicAndErrorCodeButNotThePayload() {
        failures.publishFailed(event(17, "orders", 2), PublishResult.retry("HTTP 503 from http://hooks/orders: " + PAYLOAD));

        assertEquals(List.of("WARN relay relay-1: publishing outbox event 17 (message id " + messageId(17)
                + ", topic orders, attempt 2) failed: HTTP 503; it will be retried"), texts());
    }

    @Test
    void onePairOfTopicAndErrorIsLoggedOncePerIntervalAndTheNextLineCountsTheFailuresLeftOut() {
        for (int i = 1; i <= 10; i++) {
            failures.publishFailed(event(i, "orders", i), PublishResult.retry("HTTP 503 from http://hooks/orders"));
        }
        failures.publishFailed(event(11, "refunds", 1), PublishResult.retry("HTTP 503 from http://hooks/refunds"));
        failures.publishFailed(event(12, "orders", 1), PublishResult.retry("could not connect to http://hooks within PT5S"));
        clock.addAndGet(Duration.ofSeconds(59).toNanos());
        failures.publishFailed(event(13, "orders", 1), PublishResult.retry("HTTP 503 from http://hooks/orders"));
        clock.addAndGet(Duration.ofSeconds(1).toNanos());
        failures.publishFailed(event(14, "orders", 1), PublishResult.retry("HTTP 503 from http://hooks/orders"));

        List<String> texts = texts();
        assertEquals(4, texts.size(), texts::toString);
        assertTrue(texts.get(0).contains("outbox event 1 ") && texts.get(0).endsWith("HTTP 503; it will be retried"));
        assertTrue(texts.get(1).contains("outbox event 11 ") && texts.get(1).contains("topic refunds"));
        assertTrue(texts.get(2).contains("outbox event 12 ") && texts.get(2).contains("failed: could not connect to"));
        assertTrue(texts.get(3).contains("outbox event 14 ") && texts.get(3).endsWith(
                "it will be retried (10 more failures of this topic with this error since the last such line)"), texts.get(3));
    }

    @Test
    void everyDeadLetterIsLoggedWithItsAttemptsCauseAndErrorCode() {
        OutboxEvent event = event(21, "orders", 30);
        for (int i = 0; i < 3; i++) {
            failures.deadLettered(claimed(event), 30, RelayFailureLog.DeadLetterCause.RETRIES_EXHAUSTED,
                    "unroutable: no queue received it (312 NO_ROUTE, exchange '', routing key 'orders')");
        }
        failures.deadLettered(claimed(event(22, "hooks", 1)), 1, RelayFailureLog.DeadLetterCause.REJECTED,
                "HTTP 400 from http://hooks/orders: " + PAYLOAD);

        List<String> texts = texts();
        assertEquals(4, texts.size());
        assertEquals("WARN relay relay-1: dead-lettered outbox event 21 (message id " + messageId(21) + ", topic orders,"
                + " attempts 30): out of attempts, last error unroutable 312 NO_ROUTE; list and requeue dead letters"
                + " with OutboxDeadLetters or the dead-letters command", texts.get(0));
        assertTrue(texts.get(3).contains("outbox event 22 (message id " + messageId(22) + ", topic hooks, attempts 1):"
                + " rejected by the publisher, last error HTTP 400;"), texts.get(3));
        assertTrue(texts.stream().noneMatch(t -> t.contains(SENTINEL)));
    }

    @Test
    void theErrorCodeKeepsWhatNamesTheErrorAndDropsWhatFollowsItsFirstColon() {
        assertEquals("HTTP 400", RelayFailureLog.errorCode("HTTP 400 from http://h/orders: " + PAYLOAD));
        assertEquals("unroutable 312 NO_ROUTE", RelayFailureLog.errorCode(
                "unroutable: no queue received it (312 NO_ROUTE, exchange 'x', routing key 'orders')"));
        assertEquals("IOException", RelayFailureLog.errorCode("IOException: Error Publishing: 503 No Responders"));
        assertEquals("no acknowledgement from Kafka within PT30S",
                RelayFailureLog.errorCode("no acknowledgement from Kafka within PT30S"));
        assertEquals("first line", RelayFailureLog.errorCode("first line\n" + PAYLOAD));
        assertEquals("(no message)", RelayFailureLog.errorCode(" "));
        String longError = "x".repeat(500);
        assertEquals(RelayFailureLog.MAX_CODE_LENGTH, RelayFailureLog.errorCode(longError).length());
    }

    private List<String> texts() {
        return lines.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList();
    }

    private static OutboxEvent event(long id, String topic, int attempt) {
        return new OutboxEvent(id, messageId(id), "acme", topic, "key-" + id, PAYLOAD, Map.of(), Instant.now(), attempt);
    }

    private static ClaimedEvent claimed(OutboxEvent event) {
        return new ClaimedEvent(event.id(), new ClaimedEvent.OrderingKey(event.tenant(), event.topic(), event.partitionKey()),
                0, 1, event.attempt() - 1, 0, System.nanoTime(), false, event, null);
    }

    private static String messageId(long id) {
        return new java.util.UUID(0xfa11L, id).toString();
    }
}

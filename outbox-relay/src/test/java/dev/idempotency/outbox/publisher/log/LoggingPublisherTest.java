package dev.idempotency.outbox.publisher.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.event.Level;

@Timeout(30)
class LoggingPublisherTest {
    private static final String SECRET_PAYLOAD = "{\"card\":\"4111-secret\"}";
    private static final String MESSAGE_41 = "5b0f4a3e-8c1d-4f2a-9e6b-1a2b3c4d5e6f";
    private static final String MESSAGE_42 = "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4";

    private final List<OutboxEvent> events = List.of(
            new OutboxEvent(41, MESSAGE_41, "acme", "orders", "order-1", SECRET_PAYLOAD, Map.of("trace", "t-1"), Instant.now(), 1),
            new OutboxEvent(42, MESSAGE_42, "acme", "payments", "pay-7", "{\"amount\":5}", Map.of(), Instant.now(), 3));

    @Test
    void logsEachEventAtInfoWithItsRoutingFieldsButNotItsPayloadAndReportsItPublished() {
        RecordingLogger logger = new RecordingLogger(Level.INFO);

        List<PublishResult> results = new LoggingPublisher(logger).publish(events);

        assertEquals(List.of(PublishResult.Status.PUBLISHED, PublishResult.Status.PUBLISHED),
                results.stream().map(PublishResult::status).toList());
        assertEquals(List.of(
                new RecordingLogger.Line(Level.INFO,
                        "outbox event 41 messageId=" + MESSAGE_41
                                + " tenant=acme topic=orders partitionKey=order-1 attempt=1 payloadBytes=22"),
                new RecordingLogger.Line(Level.INFO,
                        "outbox event 42 messageId=" + MESSAGE_42
                                + " tenant=acme topic=payments partitionKey=pay-7 attempt=3 payloadBytes=12")),
                logger.lines());
    }

    @Test
    void logsThePayloadAndHeadersOnlyWhenDebugIsEnabled() {
        RecordingLogger logger = new RecordingLogger(Level.DEBUG);

        new LoggingPublisher(logger).publish(events.subList(0, 1));

        assertEquals(2, logger.lines().size());
        assertFalse(logger.lines().get(0).text().contains("4111-secret"), "the INFO line must not carry the payload");
        assertEquals(new RecordingLogger.Line(Level.DEBUG,
                "outbox event 41 headers={trace=t-1} payload=" + SECRET_PAYLOAD), logger.lines().get(1));
    }

    @Test
    void anEmptyBatchGivesNoResults() {
        assertTrue(new LoggingPublisher(new RecordingLogger(Level.INFO)).publish(List.of()).isEmpty());
    }

    @Test
    void settingsNameTheLoggerAndRefuseUnknownNames() {
        LoggingPublisherConfig config = LoggingPublisherConfig.builder()
                .settings(Map.of("logger", "outbox.test")).build();
        assertEquals("outbox.test", config.loggerName());
        assertEquals(PublishResult.Status.PUBLISHED,
                new LoggingPublisher(config).publish(events.subList(0, 1)).get(0).status());

        IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
                () -> LoggingPublisherConfig.builder().settings(Map.of("loger", "x")).build());
        assertEquals("unknown log publisher setting 'loger'; known settings: logger", error.getMessage());
    }
}

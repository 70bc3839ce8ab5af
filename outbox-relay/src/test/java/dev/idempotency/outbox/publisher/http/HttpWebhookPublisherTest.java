package dev.idempotency.outbox.publisher.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import dev.idempotency.outbox.publisher.FreePorts;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class HttpWebhookPublisherTest {
    private final WebhookReceiver receiver = new WebhookReceiver();

    @AfterEach
    void stopReceiver() {
        receiver.close();
    }

    @Test
    void postsEachEventsPayloadToItsTopicPathWithTheEventIdAndRoutingHeaders() {
        OutboxEvent order = event(101, "orders", "order 7", "{\"total\":12.5}", Map.of("trace-id", "t-1"));
        OutboxEvent refund = event(102, "refunds", "refund-1", "{\"amount\":3}", Map.of());

        List<PublishResult> results;
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                .baseUrl(receiver.url("/hooks")).header("Authorization", "Bearer s3cret").build())) {
            results = publisher.publish(List.of(order, refund));
        }

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED), statuses(results));
        assertEquals(2, receiver.received().size());
        WebhookReceiver.Request request = receiver.receivedWithKey(messageId(101));
        assertEquals("POST", request.method());
        assertEquals("/hooks/orders", request.uri().getRawPath());
        assertEquals("{\"total\":12.5}", request.body());
        assertEquals("application/json", request.header("Content-Type"));
        assertEquals("acme", request.header("Outbox-Tenant"));
        assertEquals("orders", request.header("Outbox-Topic"));
        assertEquals("order%207", request.header("Outbox-Partition-Key"), "a space is percent-encoded");
        assertEquals("t-1", request.header("trace-id"));
        assertEquals("Bearer s3cret", request.header("Authorization"));
        assertEquals("/hooks/refunds", receiver.receivedWithKey(messageId(102)).uri().getRawPath());
    }

    @Test
    void theTopicIsAppendedAsOneEncodedPathSegment() {
        try (HttpWebhookPublisher publisher = publisher(receiver.url("/hooks/"))) {
            assertEquals(Status.PUBLISHED, publisher.publish(List.of(event(1, "eu/orders v2"))).get(0).status());
        }

        assertEquals("/hooks/eu%2Forders%20v2", receiver.received().get(0).uri().getRawPath());
    }

    @Test
    void withoutTopicInThePathEveryEventGoesToTheBaseUrlItself() {
        HttpWebhookPublisherConfig config = HttpWebhookPublisherConfig.builder()
                .baseUrl(receiver.url("/in?source=outbox"))
                .appendTopicToPath(false).build();
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(config)) {
            assertEquals(Status.PUBLISHED, publisher.publish(List.of(event(1, "orders"))).get(0).status());
        }

        WebhookReceiver.Request request = receiver.received().get(0);
        assertEquals("/in", request.uri().getRawPath());
        assertEquals("source=outbox", request.uri().getRawQuery());
        assertEquals("orders", request.header("Outbox-Topic"));
    }

    @Test
    void successIsPublishedClientErrorsAreRejectedAndEverythingElseIsRetried() {
        Map<String, Integer> statusByKey = Map.of(messageId(1), 200, messageId(2), 204, messageId(3), 400,
                messageId(4), 404, messageId(5), 422, messageId(6), 408, messageId(7), 429, messageId(8), 500,
                messageId(9), 503, messageId(10), 302);
        receiver.answer(request -> {
            int status = statusByKey.get(request.header("Idempotency-Key"));
            return new WebhookReceiver.Answer(status, status < 300 ? "" : "because " + status);
        });
        List<OutboxEvent> events = IntStream.rangeClosed(1, 10).mapToObj(id -> event(id, "orders")).toList();

        List<PublishResult> results;
        try (HttpWebhookPublisher publisher = publisher(receiver.url("/hooks"))) {
            results = publisher.publish(events);
        }

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.REJECTED, Status.REJECTED, Status.REJECTED,
                Status.RETRY, Status.RETRY, Status.RETRY, Status.RETRY, Status.RETRY), statuses(results));
        assertNull(results.get(0).error());
        assertEquals("HTTP 422 from " + receiver.url("/hooks/orders") + ": because 422", results.get(4).error());
        assertEquals("HTTP 503 from " + receiver.url("/hooks/orders") + ": because 503", results.get(8).error());
    }

    @Test
    void aReceiverThatDoesNotAnswerWithinTheRequestTimeoutIsRetriedWithoutHoldingUpTheOthers()
            throws InterruptedException {
        CountDownLatch releaseSlowAnswer = new CountDownLatch(1);
        receiver.answer(request -> {
            if (request.header("Idempotency-Key").equals(messageId(1))) {
                releaseSlowAnswer.await(30, TimeUnit.SECONDS);
            }
            return new WebhookReceiver.Answer(200, "");
        });
        HttpWebhookPublisherConfig config = HttpWebhookPublisherConfig.builder().baseUrl(receiver.url("/hooks"))
                .requestTimeout(Duration.ofMillis(500)).connectTimeout(Duration.ofSeconds(2)).build();

        List<PublishResult> results;
        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(config)) {
            results = publisher.publish(List.of(event(1, "orders"), event(2, "orders")));
        } finally {
            releaseSlowAnswer.countDown();
        }

        assertEquals(List.of(Status.RETRY, Status.PUBLISHED), statuses(results));
        assertEquals("no response from " + receiver.url("/hooks/orders") + " within PT0.5S", results.get(0).error());
    }

    @Test
    void theBatchIsSentConcurrently() {
        // Each request is answered only once both have arrived: sent one after the other, the first would time out.
        CountDownLatch bothArrived = new CountDownLatch(2);
        receiver.answer(request -> {
            bothArrived.countDown();
            boolean together = bothArrived.await(20, TimeUnit.SECONDS);
            return new WebhookReceiver.Answer(together ? 200 : 500, "");
        });
        HttpWebhookPublisherConfig config = HttpWebhookPublisherConfig.builder().baseUrl(receiver.url("/hooks"))
                .requestTimeout(Duration.ofSeconds(15)).build();

        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(config)) {
            assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED),
                    statuses(publisher.publish(List.of(event(1, "a"), event(2, "b")))));
        }
    }

    @Test
    void noMoreThanTheConfiguredNumberOfRequestsAreInFlightAtOnce() {
        receiver.answer(request -> {
            Thread.sleep(20); // time itself: a slow receiver, so requests overlap
            return new WebhookReceiver.Answer(200, "");
        });
        HttpWebhookPublisherConfig config = HttpWebhookPublisherConfig.builder().baseUrl(receiver.url("/hooks"))
                .maxConcurrentRequests(2).build();
        List<OutboxEvent> events = IntStream.rangeClosed(1, 12).mapToObj(id -> event(id, "t" + id)).toList();

        try (HttpWebhookPublisher publisher = new HttpWebhookPublisher(config)) {
            assertTrue(statuses(publisher.publish(events)).stream().allMatch(Status.PUBLISHED::equals));
        }

        assertEquals(12, receiver.received().size());
        assertTrue(receiver.mostInFlight() <= 2, "at most 2 in flight, saw " + receiver.mostInFlight());
    }

    @Test
    void anUnreachableReceiverIsUnavailableNotAFailureOfTheEvents() {
        String url = "http://127.0.0.1:" + FreePorts.closedPort() + "/hooks";

        List<PublishResult> results;
        try (HttpWebhookPublisher publisher = publisher(url)) {
            results = publisher.publish(List.of(event(1, "orders"), event(2, "orders")));
        }

        assertEquals(List.of(Status.UNAVAILABLE, Status.UNAVAILABLE), statuses(results));
        assertTrue(results.get(0).error().startsWith("could not connect to " + url + "/orders"), results.get(0).error());
    }

    @Test
    void eventHeadersThatAreInvalidOrWouldReplaceThePublishersAreSkippedAndTheRestSent() {
        Map<String, String> headers = Map.of("bad header", "x", "Content-Type", "text/plain", "Host", "evil.example",
                "Idempotency-Key", "forged", "X-Good", "ok", "X-Accented", "café");

        try (HttpWebhookPublisher publisher = publisher(receiver.url("/hooks"))) {
            assertEquals(Status.PUBLISHED,
                    publisher.publish(List.of(event(7, "orders", "k", "{}", headers))).get(0).status());
        }

        WebhookReceiver.Request request = receiver.received().get(0);
        assertEquals("ok", request.header("X-Good"));
        assertEquals(messageId(7), request.header("Idempotency-Key"));
        assertEquals(List.of(messageId(7)), request.headers().get("Idempotency-Key"));
        assertEquals("application/json", request.header("Content-Type"));
        assertEquals(List.of(receiver.url("").substring("http://".length())), request.headers().get("Host"));
        assertNull(request.header("bad header"));
        assertNull(request.header("X-Accented"));
    }

    @Test
    void buildNamesTheSettingItRefuses() {
        assertEquals("baseUrl is required", refusal(HttpWebhookPublisherConfig.builder()));
        assertEquals("baseUrl must be an absolute http or https URL with a host (was 'ftp://files.example/x')",
                refusal(HttpWebhookPublisherConfig.builder().baseUrl("ftp://files.example/x")));
        assertEquals("baseUrl must not have a query when the topic is appended to its path (was 'http://h/x?a=1')",
                refusal(HttpWebhookPublisherConfig.builder().baseUrl("http://h/x?a=1")));
        assertEquals("requestTimeout must be a positive duration (was PT0S)",
                refusal(HttpWebhookPublisherConfig.builder().baseUrl("http://h/x").requestTimeout(Duration.ZERO)));
        assertEquals("maxConcurrentRequests must be between 1 and 1000 (was 0)",
                refusal(HttpWebhookPublisherConfig.builder().baseUrl("http://h/x").maxConcurrentRequests(0)));
        assertEquals("header 'Content-Type' is set by the publisher itself",
                refusal(HttpWebhookPublisherConfig.builder()
                        .baseUrl("http://h/x").header("Content-Type", "text/plain")));
    }

    @Test
    void settingsBuildTheSameConfigurationAndHideHeaderValues() {
        HttpWebhookPublisherConfig config = HttpWebhookPublisherConfig.builder()
                .settings(Map.of("base-url", "https://hooks.example/in",
                "request-timeout", "3s", "connect-timeout", "750ms", "max-concurrent-requests", "4",
                "append-topic-to-path", "true", "header.Authorization", "Bearer s3cret")).build();

        assertEquals("https://hooks.example/in/orders", config.urlFor("orders").toString());
        assertEquals(Duration.ofSeconds(3), config.requestTimeout());
        assertEquals(Duration.ofMillis(750), config.connectTimeout());
        assertEquals(4, config.maxConcurrentRequests());
        assertEquals(Map.of("Authorization", "Bearer s3cret"), config.headers());
        assertTrue(!config.toString().contains("s3cret"), config.toString());
        assertThrows(IllegalArgumentException.class, () -> HttpWebhookPublisherConfig.builder()
                .settings(Map.of("url", "http://h")).build());
    }

    private static HttpWebhookPublisher publisher(String baseUrl) {
        return new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder().baseUrl(baseUrl).build());
    }

    private static String refusal(HttpWebhookPublisherConfig.Builder builder) {
        return assertThrows(IllegalArgumentException.class, builder::build).getMessage();
    }

    private static List<Status> statuses(List<PublishResult> results) {
        return results.stream().map(PublishResult::status).toList();
    }

    private static OutboxEvent event(long id, String topic) {
        return event(id, topic, "key-" + id, "{\"n\":" + id + "}", Map.of());
    }

    private static OutboxEvent event(long id, String topic, String partitionKey, String payload,
                                     Map<String, String> headers) {
        return new OutboxEvent(id, messageId(id), "acme", topic, partitionKey, payload, headers, Instant.now(), 1);
    }

    /** A message id unlike the outbox id, so that a test sees which of the two a message carries. */
    static String messageId(long id) {
        return new UUID(0x5eedL, id).toString();
    }
}

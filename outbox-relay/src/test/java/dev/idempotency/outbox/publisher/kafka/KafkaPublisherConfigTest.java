package dev.idempotency.outbox.publisher.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KafkaPublisherConfigTest {

    @Test
    void theProducerIsIdempotentWithAcksFromAllReplicasAndTimeoutsFromThePublishTimeout() {
        KafkaPublisherConfig config = KafkaPublisherConfig.builder()
                .bootstrapServers("kafka-1:9092,kafka-2:9092")
                .publishTimeout(Duration.ofSeconds(20))
                .producerProperty("compression.type", "zstd")
                .build();

        Map<String, Object> producer = config.producerSettings();

        assertEquals(true, producer.get("enable.idempotence"));
        assertEquals("all", producer.get("acks"));
        assertEquals("kafka-1:9092,kafka-2:9092", producer.get("bootstrap.servers"));
        assertEquals("idempotency-outbox-relay", producer.get("client.id"));
        assertEquals(20_000, producer.get("delivery.timeout.ms"));
        assertEquals(10_000L, producer.get("max.block.ms"), "half the timeout, so a blocked send still ends in time");
        assertEquals(19_995, producer.get("request.timeout.ms"), "the timeout less Kafka's default 5 ms linger");
        assertEquals("zstd", producer.get("compression.type"));
    }

    @Test
    void readsEverySettingFromStrings() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("bootstrap-servers", "127.0.0.1:9092");
        settings.put("client-id", "relay-eu-1");
        settings.put("topic-prefix", "prod.");
        settings.put("publish-timeout", "45s");
        settings.put("producer.linger.ms", "20");
        settings.put("producer.security.protocol", "SSL");

        KafkaPublisherConfig config = KafkaPublisherConfig.builder().settings(settings).build();

        assertEquals("127.0.0.1:9092", config.bootstrapServers());
        assertEquals("relay-eu-1", config.clientId());
        assertEquals("prod.", config.topicPrefix());
        assertEquals(Duration.ofSeconds(45), config.publishTimeout());
        assertEquals(Map.of("linger.ms", "20", "security.protocol", "SSL"), config.producerProperties());
    }

    @Test
    void readsTimeoutsInMillisecondsMinutesAndIso8601() {
        assertEquals(Duration.ofMillis(1500), timeoutOf("1500ms"));
        assertEquals(Duration.ofMinutes(2), timeoutOf("2m"));
        assertEquals(Duration.ofSeconds(90), timeoutOf("PT1M30S"));
    }

    @Test
    void refusesAnUnknownSettingNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
                KafkaPublisherConfig.builder()
                        .settings(Map.of("bootstrap-servers", "h:9092", "bootstrap-server", "h:9092")).build());
        assertTrue(e.getMessage().contains("setting 'bootstrap-server';"), e.getMessage());
    }

    @Test
    void refusesAnUnreadableTimeoutNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> timeoutOf("thirty seconds"));
        assertTrue(e.getMessage().contains("setting 'publish-timeout' must be a duration"), e.getMessage());
    }

    @Test
    void requiresBootstrapServers() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KafkaPublisherConfig.builder().build());
        assertTrue(e.getMessage().startsWith("bootstrapServers"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "localhost:9092,", "localhost:port", "localhost:0", "localhost:70000"})
    void refusesBootstrapServersThatAreNotHostPortPairs(String servers) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KafkaPublisherConfig.builder().bootstrapServers(servers).build());
        assertTrue(e.getMessage().startsWith("bootstrapServers"), e.getMessage());
    }

    @Test
    void refusesATopicPrefixKafkaWouldNotAccept() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> valid().topicPrefix("prod/").build());
        assertTrue(e.getMessage().startsWith("topicPrefix"), e.getMessage());
    }

    @Test
    void refusesAPublishTimeoutOutsideOneSecondToTenMinutes() {
        for (Duration timeout : new Duration[] {Duration.ofMillis(999), Duration.ofMinutes(11)}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> valid().publishTimeout(timeout).build());
            assertTrue(e.getMessage().startsWith("publishTimeout"), e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"acks", "enable.idempotence", "retries", "max.block.ms", "delivery.timeout.ms",
            "transactional.id", "partitioner.class", "partitioner.ignore.keys", "key.serializer", "bootstrap.servers"})
    void refusesProducerPropertiesThatWouldChangeWhatThePublisherPromises(String property) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> valid().producerProperty(property, "1").build());
        assertTrue(e.getMessage().contains(property), e.getMessage());
    }

    @Test
    void refusesAProducerPropertyOfTheWrongTypeNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> valid().producerProperty("linger.ms", "soon").build());
        assertTrue(e.getMessage().contains("linger.ms"), e.getMessage());
    }

    @Test
    void refusesRequestTimeoutAndLingerThatDoNotFitInThePublishTimeout() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> valid()
                .publishTimeout(Duration.ofSeconds(10))
                .producerProperty("request.timeout.ms", "10000")
                .producerProperty("linger.ms", "50")
                .build());
        assertTrue(e.getMessage().contains("request.timeout.ms"), e.getMessage());
    }

    @Test
    void refusesMoreThanFiveRequestsInFlightWhichWouldBreakPerKeyOrder() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> valid().producerProperty("max.in.flight.requests.per.connection", "6").build());
        assertTrue(e.getMessage().contains("max.in.flight.requests.per.connection"), e.getMessage());
    }

    private static KafkaPublisherConfig.Builder valid() {
        return KafkaPublisherConfig.builder().bootstrapServers("127.0.0.1:9092");
    }

    private static Duration timeoutOf(String text) {
        return KafkaPublisherConfig.builder()
                .settings(Map.of("bootstrap-servers", "h:9092", "publish-timeout", text)).build()
                .publishTimeout();
    }
}

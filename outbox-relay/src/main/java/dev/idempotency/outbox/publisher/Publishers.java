package dev.idempotency.outbox.publisher;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.outbox.publisher.log.LoggingPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import java.util.List;
import java.util.Map;

/**
 * Builds a publisher by name from string settings, for the runnable process. Only the chosen
 * publisher's classes, and so only its client library, are loaded: {@code log} and {@code http}
 * need no broker client on the class path.
 */
public final class Publishers {
    /** The names {@link #create(String, Map)} knows. */
    public static final List<String> NAMES = List.of("log", "http", "rabbitmq", "nats", "kafka");

    private Publishers() {
    }

    /**
     * The publisher called {@code name}, built from {@code settings} as its builder's
     * {@code settings(Map)} reads them (e.g. {@code base-url} for {@code http}). An
     * {@link IllegalArgumentException} names an unknown publisher or a bad setting.
     */
    public static Publisher create(String name, Map<String, String> settings) {
        return switch (name) {
            case "log" -> LoggingPublisher.builder().settings(settings).build();
            case "http" -> HttpWebhookPublisher.builder().settings(settings).build();
            case "rabbitmq" -> RabbitMqPublisher.builder().settings(settings).build();
            case "nats" -> NatsJetStreamPublisher.builder().settings(settings).build();
            case "kafka" -> KafkaPublisher.builder().settings(settings).build();
            default -> throw new IllegalArgumentException("unknown publisher '" + name + "'; known publishers: "
                    + String.join(", ", NAMES));
        };
    }
}

package dev.idempotency.outbox.publisher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.outbox.publisher.log.LoggingPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;

@Timeout(30)
class PublishersTest {

    @Test
    void eachNameBuildsItsPublisherFromStringSettings() {
        try (Publisher log = Publishers.create("log", Map.of());
             Publisher http = Publishers.create("http", Map.of("base-url", "http://127.0.0.1:9/hooks"));
             Publisher rabbit = Publishers.create("rabbitmq", Map.of("host", "127.0.0.1"));
             Publisher nats = Publishers.create("nats", Map.of("servers", "nats://127.0.0.1:4222"));
             Publisher kafka = Publishers.create("kafka", Map.of("bootstrap-servers", "127.0.0.1:9"))) {
            assertInstanceOf(LoggingPublisher.class, log);
            assertInstanceOf(HttpWebhookPublisher.class, http);
            assertInstanceOf(RabbitMqPublisher.class, rabbit);
            assertInstanceOf(NatsJetStreamPublisher.class, nats);
            assertInstanceOf(KafkaPublisher.class, kafka);
        }
    }

    @Test
    void anUnknownNameOrSettingIsRefusedByName() {
        assertEquals("unknown publisher 'kafak'; known publishers: log, http, rabbitmq, nats, kafka",
                assertThrows(IllegalArgumentException.class, () -> Publishers.create("kafak", Map.of())).getMessage());
        assertEquals("http publisher setting 'base-url' is required",
                assertThrows(IllegalArgumentException.class, () -> Publishers.create("http", Map.of())).getMessage());
    }

    @Test
    void logAndHttpPublishersWorkWithoutAnyBrokerClientOnTheClassPath() throws Exception {
        // Only our classes, the core API and slf4j-api: no amqp-client, no jnats.
        URL[] classPath = {location(Publishers.class), location(Publisher.class), location(Logger.class)};
        try (URLClassLoader withoutBrokers = new URLClassLoader(classPath, ClassLoader.getPlatformClassLoader())) {
            Method create = withoutBrokers.loadClass(Publishers.class.getName()).getMethod("create", String.class, Map.class);

            assertEquals(LoggingPublisher.class.getName(), create.invoke(null, "log", Map.of()).getClass().getName());
            assertEquals(HttpWebhookPublisher.class.getName(),
                    create.invoke(null, "http", Map.of("base-url", "http://127.0.0.1:9")).getClass().getName());
            InvocationTargetException missing = assertThrows(InvocationTargetException.class,
                    () -> create.invoke(null, "rabbitmq", Map.of()));
            assertInstanceOf(NoClassDefFoundError.class, missing.getCause(), "the RabbitMQ client really is absent");
        }
    }

    private static URL location(Class<?> type) {
        return type.getProtectionDomain().getCodeSource().getLocation();
    }
}

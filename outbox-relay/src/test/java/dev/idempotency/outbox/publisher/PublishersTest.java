package dev.idempotency.outbox.publisher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import dev.idempotency.outbox.publisher.http.HttpWebhookPublisher;
import dev.idempotency.outbox.publisher.kafka.KafkaPublisher;
import dev.idempotency.outbox.publisher.log.LoggingPublisher;
import dev.idempotency.outbox.publisher.log.LoggingPublisherProvider;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
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
        assertEquals("unknown publisher 'kafak'; publishers on the class path: http, kafka, log, nats, rabbitmq",
                assertThrows(IllegalArgumentException.class, () -> Publishers.create("kafak", Map.of())).getMessage());
        assertEquals("http publisher setting 'base-url' is required",
                assertThrows(IllegalArgumentException.class, () -> Publishers.create("http", Map.of())).getMessage());
        assertEquals(List.of("http", "kafka", "log", "nats", "rabbitmq"), Publishers.names());
    }

    @Test
    void aProviderRegisteredByAnotherClassPathEntryIsFoundAndGetsTheSettings(@TempDir Path entry) throws Exception {
        try (URLClassLoader withCustom = classPathEntryRegistering(entry, EchoProvider.class)) {
            Publisher echo = inContextOf(withCustom, () -> Publishers.create("echo", Map.of("greeting", "hello")));

            assertEquals(Map.of("greeting", "hello"), ((EchoPublisher) echo).settings);
            assertEquals(List.of("echo", "http", "kafka", "log", "nats", "rabbitmq"),
                    inContextOf(withCustom, Publishers::names));
        }
    }

    @Test
    void twoProvidersOfOneNameAreRefusedNamingBoth(@TempDir Path entry) throws Exception {
        try (URLClassLoader withSecondLog = classPathEntryRegistering(entry, SecondLogProvider.class)) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> inContextOf(withSecondLog, () -> Publishers.create("log", Map.of())));

            assertEquals("more than one publisher is named 'log' on the class path ("
                    + LoggingPublisherProvider.class.getName() + ", " + SecondLogProvider.class.getName()
                    + "); remove all but one", refused.getMessage());
            // The other names are still unambiguous.
            try (Publisher http = inContextOf(withSecondLog,
                    () -> Publishers.create("http", Map.of("base-url", "http://127.0.0.1:9/hooks")))) {
                assertInstanceOf(HttpWebhookPublisher.class, http);
            }
        }
    }

    @Test
    void logAndHttpPublishersWorkWithoutAnyBrokerClientOnTheClassPath() throws Exception {
        // Only our classes, the core API and slf4j-api: no amqp-client, no jnats, no kafka-clients. Every
        // provider is instantiated to learn its name, so this also proves none of them loads its client early.
        URL[] classPath = {location(Publishers.class), location(Publisher.class), location(Logger.class)};
        try (URLClassLoader withoutBrokers = new URLClassLoader(classPath, ClassLoader.getPlatformClassLoader())) {
            Method create = withoutBrokers.loadClass(Publishers.class.getName()).getMethod("create", String.class, Map.class);

            assertEquals(LoggingPublisher.class.getName(),
                    inContextOf(withoutBrokers, () -> create.invoke(null, "log", Map.of())).getClass().getName());
            assertEquals(HttpWebhookPublisher.class.getName(), inContextOf(withoutBrokers,
                    () -> create.invoke(null, "http", Map.of("base-url", "http://127.0.0.1:9"))).getClass().getName());
            InvocationTargetException missing = assertThrows(InvocationTargetException.class,
                    () -> inContextOf(withoutBrokers, () -> create.invoke(null, "rabbitmq", Map.of())));
            assertInstanceOf(NoClassDefFoundError.class, missing.getCause(), "the RabbitMQ client really is absent");
        }
    }

    /** A publisher of the test's own, as a user's jar would bring it. */
    public static final class EchoProvider implements PublisherProvider {
        @Override
        public String name() {
            return "echo";
        }

        @Override
        public Publisher create(Map<String, String> settings) {
            return new EchoPublisher(settings);
        }
    }

    /** Publishes nothing; keeps the settings it was made with. */
    static final class EchoPublisher implements Publisher {
        final Map<String, String> settings;

        EchoPublisher(Map<String, String> settings) {
            this.settings = Map.copyOf(settings);
        }

        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            return events.stream().map(event -> PublishResult.published()).toList();
        }

        @Override
        public void close() {
        }
    }

    /** A second provider named {@code log}. */
    public static final class SecondLogProvider implements PublisherProvider {
        @Override
        public String name() {
            return "log";
        }

        @Override
        public Publisher create(Map<String, String> settings) {
            throw new AssertionError("an ambiguous name must not reach a provider");
        }
    }

    /** A class path entry (a directory) whose service file registers {@code provider}, after this test's class path. */
    private static URLClassLoader classPathEntryRegistering(Path entry, Class<? extends PublisherProvider> provider)
            throws Exception {
        Path services = Files.createDirectories(entry.resolve("META-INF/services"));
        Files.writeString(services.resolve(PublisherProvider.class.getName()), provider.getName() + "\n");
        return new URLClassLoader(new URL[] {entry.toUri().toURL()}, PublishersTest.class.getClassLoader());
    }

    /** Runs {@code action} with {@code loader} as the thread's context class loader, where Publishers looks. */
    private static <T> T inContextOf(ClassLoader loader, Callable<T> action) throws Exception {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        try {
            return action.call();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }

    private static URL location(Class<?> type) {
        return type.getProtectionDomain().getCodeSource().getLocation();
    }
}

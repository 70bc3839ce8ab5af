package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.HidingClassLoader;
import dev.idempotency.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A writer and a relay without OpenTelemetry on the classpath, with the default tracing: in a class
 * loader that holds the test classpath less every OpenTelemetry jar, an event written by the executor is
 * published without trace headers, nothing fails, and the only OpenTelemetry class asked for is the one
 * name each checks for presence, once per class loader.
 */
@Timeout(60)
class RelayWithoutTracingLibraryTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();

    @Test
    void withoutTheApiTheRelayPublishesWithoutTraceHeadersAndLoadsNoTracingClass() throws Exception {
        HidingClassLoader.Run run = HidingClassLoader.run("io.opentelemetry", Scenario.class, outbox.schema());

        assertEquals("published, trace headers {}", run.result());
        assertEquals(List.of("io.opentelemetry.api.trace.Span"), run.hiddenRequests(),
                "only the presence check asks for an OpenTelemetry class, once");
    }

    /** Runs inside the hiding class loader: every class it touches comes from there. */
    public static final class Scenario implements Function<String[], String> {
        @Override
        public String apply(String[] args) {
            DataSource dataSource = TestDatabase.at(args[0], args[1], args[2]).simpleDataSource();
            PostgresIdempotentExecutor.builder(dataSource).config(IdempotencyConfig.builder().schema(args[3]).build()).build()
                    .run("payment-1", "acme", tx -> {
                        tx.outbox().publish("payments", "order-1", Map.of("cents", 100));
                        return "ok";
                    });
            LinkedBlockingQueue<OutboxEvent> received = new LinkedBlockingQueue<>();
            Publisher publisher = new Publisher() {
                @Override
                public List<PublishResult> publish(List<OutboxEvent> events) {
                    received.addAll(events);
                    return events.stream().map(e -> PublishResult.published()).toList();
                }

                @Override
                public void close() {
                }
            };
            try (OutboxRelay relay = OutboxRelay.builder(dataSource, publisher).config(OutboxRelayConfig.builder()
                    .schema(args[3]).instanceId("untraced").partitions(2).idlePollMin(Duration.ofMillis(10))
                    .idlePollMax(Duration.ofMillis(100)).build()).build()) {
                relay.start();
                OutboxEvent event = received.poll(30, TimeUnit.SECONDS);
                return event == null ? "nothing published" : "published, trace headers " + event.traceHeaders();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "interrupted";
            }
        }
    }
}

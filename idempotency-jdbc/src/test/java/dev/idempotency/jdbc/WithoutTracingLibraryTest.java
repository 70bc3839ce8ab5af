package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.testing.HidingClassLoader;
import dev.idempotency.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An application without OpenTelemetry on its classpath: the executor, its outbox and the consumer run
 * with the default tracing ({@code Tracing.auto()}) in a class loader that holds the test classpath less
 * every OpenTelemetry jar. Nothing is stored with the event, nothing fails, and the only OpenTelemetry
 * class the library ever asks for is the one name it checks for presence, once.
 */
@Timeout(60)
class WithoutTracingLibraryTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(2);

    @Test
    void withoutTheApiNothingIsStoredNothingFailsAndNoTracingClassIsLoaded() throws Exception {
        HidingClassLoader.Run run = HidingClassLoader.run("io.opentelemetry", Scenario.class, db.schema.name());

        assertEquals("first_run replay APPLIED traceparent=null tracestate=null", run.result());
        assertEquals(List.of("io.opentelemetry.api.trace.Span"), run.hiddenRequests(),
                "only the presence check asks for an OpenTelemetry class, once");
    }

    /** Runs inside the hiding class loader: every class it touches comes from there. */
    public static final class Scenario implements Function<String[], String> {
        @Override
        public String apply(String[] args) {
            DataSource dataSource = TestDatabase.at(args[0], args[1], args[2]).simpleDataSource();
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(dataSource)
                    .config(IdempotencyConfig.builder().schema(args[3]).build()).build();
            String key = ExecutorFixture.newKey();
            boolean first = !executor.run(key, "t1", tx -> {
                tx.outbox().publish("payments", key, Map.of("cents", 100));
                return "ok";
            }).replayed();
            boolean replay = executor.run(key, "t1", tx -> "not again").replayed();
            Delivery delivery = IdempotentConsumer.builder(executor, "billing").build()
                    .consume("m-" + key, "t1", Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")::get,
                            tx -> { });
            Map<String, Object> row = org.jdbi.v3.core.Jdbi.create(dataSource).withHandle(h -> h.createQuery(
                    "SELECT traceparent, tracestate FROM " + args[3] + ".outbox_events WHERE partition_key = :key")
                    .bind("key", key).mapToMap().one());
            return (first ? "first_run" : "?") + " " + (replay ? "replay" : "?") + " " + delivery.outcome()
                    + " traceparent=" + row.get("traceparent") + " tracestate=" + row.get("tracestate");
        }
    }
}

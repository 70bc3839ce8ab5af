package dev.idempotency.http;

import static dev.idempotency.http.HttpFixture.createPayment;
import static dev.idempotency.http.HttpFixture.newKey;
import static dev.idempotency.http.HttpFixture.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * With tracing on, each request that needs a key is one span with its outcome, the executor's run inside
 * it; a request that needs none makes no span; the key, the tenant, the path and the body are never attributes.
 */
@Timeout(60)
class IdempotentHttpTracingTest {
    private static final String TENANT = "tenant-a";
    private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");

    @RegisterExtension
    static final HttpFixture db = new HttpFixture(2);

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final Tracing tracing = Tracing.openTelemetry(OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build());
    private final IdempotentHttp<PostgresTransaction> http = IdempotentHttp.builder(PostgresIdempotentExecutor
                    .builder(db.schema.dataSource()).config(IdempotencyConfig.builder().schema(db.schema.name()).build())
                    .tracing(tracing).build())
            .tracing(tracing).build();
    private final AtomicInteger runs = new AtomicInteger();

    @Test
    void eachKeyedRequestIsOneSpanWithItsOutcomeAndTheExecutorsRunInsideIt() {
        String key = newKey();
        http.handle(post(key, "{\"cents\":100}").build(), TENANT, tx -> createPayment(tx, runs, 100));
        http.handle(post(key, "{\"cents\":100}").build(), TENANT, tx -> createPayment(tx, runs, 100));
        http.handle(post(key, "{\"cents\":999}").build(), TENANT, tx -> createPayment(tx, runs, 999));
        http.handle(HttpRequestData.builder("POST", "/payments").build(), TENANT, tx -> createPayment(tx, runs, 1));
        http.handle(HttpRequestData.builder("POST", "/payments").keyFieldLines(List.of("\"a\", \"b\"")).build(), TENANT,
                tx -> createPayment(tx, runs, 1));
        http.handle(HttpRequestData.builder("GET", "/payments").build(), TENANT, tx -> createPayment(tx, runs, 1));

        List<SpanData> handled = spans.getFinishedSpanItems().stream()
                .filter(s -> s.getName().equals("IdempotentHttp.handle")).toList();
        assertEquals(List.of("first_run", "replay", "key_reused", "missing_key", "invalid"),
                handled.stream().map(s -> s.getAttributes().get(OUTCOME)).toList(), "a GET needs no key: no span");
        SpanData run = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("IdempotentExecutor.run"))
                .findFirst().orElseThrow();
        assertEquals(handled.get(0).getSpanId(), run.getParentSpanId());
        assertEquals(handled.get(0).getTraceId(), run.getTraceId());
        for (SpanData span : spans.getFinishedSpanItems()) {
            span.getAttributes().forEach((attribute, value) -> assertFalse(String.valueOf(value).contains(key)
                    || String.valueOf(value).equals(TENANT) || String.valueOf(value).contains("/payments")
                    || String.valueOf(value).contains("cents"), span.getName() + " " + attribute + "=" + value));
        }
    }
}

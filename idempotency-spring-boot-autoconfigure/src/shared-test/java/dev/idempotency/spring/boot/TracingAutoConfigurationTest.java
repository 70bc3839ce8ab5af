package dev.idempotency.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.testing.MigratedSchema;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starter's tracing: the library's spans go to the application's OpenTelemetry bean (the one Spring
 * Boot makes with Micrometer Tracing's OpenTelemetry bridge), and {@code idempotency.tracing.enabled=false}
 * turns them off. Run by each Spring Boot line's starter (src/shared-test).
 */
class TracingAutoConfigurationTest {
    @RegisterExtension
    final MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("starter_tracing").build();

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();

    private ApplicationContextRunner runner() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(IdempotencyAutoConfiguration.class))
                .withBean(DataSource.class, () -> db.newPool(4), definition -> definition.setDestroyMethodName("close"))
                .withBean(OpenTelemetry.class, () -> OpenTelemetrySdk.builder()
                        .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                        .build())
                .withPropertyValues("idempotency.schema=" + db.name());
    }

    @Test
    void theExecutorsSpansGoToTheApplicationsOpenTelemetryBeanWithTheOutcomeAndNoKeyOrTenant() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            @SuppressWarnings("unchecked")
            IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
            executor.run("order-1", "tenant-1", tx -> Map.of("paid", 1));

            assertThat(spans.getFinishedSpanItems()).extracting(SpanData::getName).contains("IdempotentExecutor.run");
            SpanData run = spans.getFinishedSpanItems().stream()
                    .filter(span -> span.getName().equals("IdempotentExecutor.run")).findFirst().orElseThrow();
            assertThat(run.getAttributes().get(AttributeKey.stringKey("idempotency.outcome"))).isEqualTo("first_run");
            assertThat(run.getAttributes().asMap().values()).doesNotContain("order-1", "tenant-1");
        });
    }

    @Test
    void tracingTurnedOffMakesNoSpanThoughTheApplicationHasOpenTelemetry() {
        runner().withPropertyValues("idempotency.tracing.enabled=false").run(context -> {
            assertThat(context.getBean(Tracing.class).enabled()).isFalse();
            @SuppressWarnings("unchecked")
            IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
            executor.run("order-1", "tenant-1", tx -> Map.of("paid", 1));

            assertThat(spans.getFinishedSpanItems()).isEmpty();
        });
    }
}

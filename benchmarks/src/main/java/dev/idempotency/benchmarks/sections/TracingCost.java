package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Section 13: what tracing costs, on and off in the same run. The executor's payment call
 * (the payment row and one outbox event) with tracing disabled, with the OpenTelemetry API on the
 * classpath but no SDK registered (the default {@code Tracing.auto()} of an application that has not
 * set one up), and with an SDK (every span sampled, batched to an exporter that drops them), each call
 * inside a request's span so that the event stores its context; measured interleaved. Then the relay
 * draining a backlog to the no-op publisher, with tracing off (events without context) and on (every
 * event with one, a send span per call linked to each).
 */
final class TracingCost implements Section {
    static final String OFF_CELL = "executor.run, Tracing.disabled()";
    static final String API_ONLY_CELL = "executor.run, Tracing.auto(), no SDK registered";
    static final String ON_CELL = "executor.run in a request span, SDK sampling all";
    /** Events of each drain: enough for a few seconds of the relay, a fraction of section 5's backlog. */
    static final int MAX_DRAIN_EVENTS = 200_000;

    @Override
    public String name() {
        return "tracing";
    }

    @Override
    public String title() {
        return "12 tracing on and off";
    }

    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        Tracing sdk = Tracing.openTelemetry(sdk());
        Tracer requests = ((io.opentelemetry.api.OpenTelemetry) sdk.openTelemetry().orElseThrow()).getTracer("bench");
        return List.of(
                PaymentCalls.executorCell(run, callers, OFF_CELL, "traced-off",
                        pool -> PostgresIdempotentExecutor.builder(pool).tracing(Tracing.disabled()), PaymentCalls::executorCall),
                PaymentCalls.executorCell(run, callers, API_ONLY_CELL, "traced-api",
                        pool -> PostgresIdempotentExecutor.builder(pool).tracing(Tracing.auto()), PaymentCalls::executorCall),
                PaymentCalls.executorCell(run, callers, ON_CELL, "traced-on",
                        pool -> PostgresIdempotentExecutor.builder(pool).tracing(sdk), (executor, insert, key) -> {
                            Span request = requests.spanBuilder("POST /payments").setSpanKind(SpanKind.SERVER).startSpan();
                            try (Scope ignored = request.makeCurrent()) {
                                PaymentCalls.executorCall(executor, insert, key);
                            } finally {
                                request.end();
                            }
                        }));
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> m = run.interleaved(cells(run, callers));
            Measurement off = m.get(0);
            rows.add(ResultRow.of(title(), OFF_CELL, callers, off));
            for (int i = 1; i < m.size(); i++) {
                Measurement on = m.get(i);
                rows.add(ResultRow.of(title(), i == 1 ? API_ONLY_CELL : ON_CELL, callers, on)
                        .compared(String.format(Locale.ROOT, "adds p50 %+.3f ms, p99 %+.3f ms; ops %s of off",
                                on.p50Millis() - off.p50Millis(), on.p99Millis() - off.p99Millis(),
                                Targets.format(Targets.ratio(on.opsPerSecond(), off.opsPerSecond())))));
            }
        }
        int events = Math.min(run.settings().relay().events(), MAX_DRAIN_EVENTS);
        Measurement drainOff = run.cell("relay drain, tracing off (" + events + " events)", 1, () -> {
            RelayDrain.fill(run, events);
            return RelayThroughput.drained(events, RelayDrain.drain(run, 1, NoOpPublisher::new, events, Tracing.disabled()));
        });
        Measurement drainOn = run.cell("relay drain, tracing on (" + events + " events)", 1, () -> {
            RelayDrain.fill(run, events, RelayBenchSql.FILL_OUTBOX_TRACED);
            return RelayThroughput.drained(events, RelayDrain.drain(run, 1, NoOpPublisher::new, events,
                    Tracing.openTelemetry(sdk())));
        });
        rows.add(drainRow("drain " + events + " events to no-op publisher, tracing off", drainOff, ""));
        rows.add(drainRow("drain " + events + " events with context, send spans on", drainOn, "events/s "
                + Targets.format(Targets.ratio(drainOn.opsPerSecond(), drainOff.opsPerSecond())) + " of off"));
        run.note("Section 13: the SDK samples every span and hands it to a BatchSpanProcessor whose exporter drops it"
                + " (the export's own cost, network and collector, is not measured). The executor's cells are section 2's"
                + " payment call with one outbox event; 'on' runs each call inside a SERVER span of its own, so the event"
                + " stores that trace's context and the run is a child span. The drains: 1 relay, batch size "
                + run.settings().relay().batchSize() + ", the 'on' backlog filled with a traceparent per event.");
        return rows;
    }

    private ResultRow drainRow(String measured, Measurement m, String compared) {
        String took = String.format(Locale.ROOT, "%.1f s", m.operations() / m.opsPerSecond());
        return new ResultRow(title(), measured, 1, m.opsPerSecond(), null, null, ClientCost.NONE,
                compared.isEmpty() ? took : took + "; " + compared, "");
    }

    /** An SDK that samples every span and drops it at export, batched as in production. */
    private static OpenTelemetrySdk sdk() {
        SpanExporter dropping = new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        };
        return OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(BatchSpanProcessor.builder(dropping).build()).build()).build();
    }
}

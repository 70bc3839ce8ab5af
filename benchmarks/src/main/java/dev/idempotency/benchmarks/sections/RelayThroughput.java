package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisherConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Section 5: relay throughput. A backlog (1,000,000 events by default, over 10,000 partition keys)
 * drained by 1 and by 3 in-JVM relays, to a no-op publisher and to NATS JetStream with acks awaited.
 * Targets: at least 50,000 events/s to the no-op publisher, at least 20,000 to JetStream.
 */
final class RelayThroughput implements Section {
    static final double NO_OP_FLOOR = 50_000;
    static final double JETSTREAM_FLOOR = 20_000;
    static final String NO_OP_CELL = "relay drain to no-op publisher";
    private static final int[] INSTANCES = {1, 3};

    @Override
    public String name() {
        return "relay";
    }

    @Override
    public String title() {
        return "5 relay throughput";
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        RelayBenchSettings relay = run.settings().relay();
        List<ResultRow> rows = new ArrayList<>();
        for (int instances : INSTANCES) {
            Measurement m = noOp(run, relay.events(), instances);
            rows.add(row(run, "drain " + relay.events() + " events to no-op publisher", instances, m, "")
                    .target(verdict(m.opsPerSecond(), NO_OP_FLOOR)));
        }
        for (int instances : INSTANCES) {
            long[] streamMessages = new long[1];
            Measurement m = run.cell("relay drain to JetStream", instances, () -> {
                RelayDrain.fill(run, relay.events());
                try (JetStreamStream stream = JetStreamStream.create(relay.natsUrl())) {
                    String subjectPrefix = stream.subjectPrefix();
                    NatsJetStreamPublisherConfig nats = NatsJetStreamPublisherConfig.builder()
                            .servers(List.of(relay.natsUrl())).subjectPrefix(subjectPrefix).connectionName("relaybench")
                            .build();
                    double seconds = RelayDrain.drain(run, instances, () -> new NatsJetStreamPublisher(nats),
                            relay.events());
                    streamMessages[0] = stream.messages();
                    return drained(relay.events(), seconds);
                }
            });
            rows.add(row(run, "drain " + relay.events() + " events to JetStream (acks)", instances, m,
                    streamMessages[0] == 0 ? "" : "stream holds " + streamMessages[0])
                    .target(verdict(m.opsPerSecond(), JETSTREAM_FLOOR)));
        }
        run.note("Section 5: callers = relay instances, each in this JVM with its own pool of "
                + RelayBenchSettings.RELAY_POOL_SIZE + " connections; " + relay.partitionKeys() + " partition keys; relay config "
                + RelayDrain.config(run, "bench-relay-0") + ". Timed from the relays' start until no event is pending "
                + "(the fill and VACUUM ANALYZE before it are not timed). JetStream: stream in memory storage, duplicate window "
                + JetStreamStream.DUPLICATE_WINDOW.toSeconds() + " s, created and deleted by the run.");
        return rows;
    }

    /** Our drain of {@code events} to the no-op publisher with {@code instances} relays; shared with section 7. */
    static Measurement noOp(BenchmarkRun run, int events, int instances) throws Exception {
        return run.cell(NO_OP_CELL + " (" + events + " events)", instances, () -> {
            RelayDrain.fill(run, events);
            return drained(events, RelayDrain.drain(run, instances, NoOpPublisher::new, events));
        });
    }

    static Measurement drained(long events, double seconds) {
        return new Measurement(events, events / seconds, Double.NaN, Double.NaN, ClientCost.NONE, 0, null);
    }

    private static ResultRow row(BenchmarkRun run, String measured, int instances, Measurement m, String compared) {
        String took = String.format(Locale.ROOT, "%.1f s", m.operations() / m.opsPerSecond());
        return new ResultRow("5 relay throughput", measured, instances, m.opsPerSecond(), null, null, ClientCost.NONE,
                compared.isEmpty() ? took : took + "; " + compared, "");
    }

    private static String verdict(double eventsPerSecond, double floor) {
        return Targets.verdict(eventsPerSecond >= floor, String.format(Locale.ROOT, ">= %.0f events/s", floor));
    }
}

package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.tracing.Tracing;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Section 14 (issue 38, item 2): the relay against its broker's own limit. For each broker, in the same
 * rounds: one relay drains {@code --broker-events} events written beforehand to a fresh destination through
 * the library's publisher, and the broker's own client publishes the same events (read back from the
 * outbox: same payloads, keys and message ids, built into the messages the publisher sends) in its
 * fastest way with the same acknowledgements ({@link BrokerPath#rawWay()}). Rows: each side's events/s and
 * relay / raw of their medians. Target: relay / raw at least 0.90 per broker.
 */
final class RelayVsBrokerClient implements Section {
    static final String TITLE = "14 relay vs broker client";
    static final double RELAY_OVER_RAW_FLOOR = 0.90;

    @Override
    public String name() {
        return "brokers";
    }

    @Override
    public String title() {
        return TITLE;
    }

    /** Needs RabbitMQ and NATS, and starts a Kafka broker: run when named, --sections brokers. */
    @Override
    public boolean runsByDefault() {
        return false;
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        RelayBenchSettings relay = run.settings().relay();
        int events = relay.brokerEvents();
        List<ResultRow> rows = new ArrayList<>();
        for (String broker : relay.brokers()) {
            try (BrokerPath path = open(broker, relay)) {
                long[] held = new long[4];
                BenchmarkRun.Cell relayCell = new BenchmarkRun.Cell(path.name() + ": relay drain (" + events + " events)", 1, () -> {
                    RelayDrain.fill(run, events);
                    try (BrokerPath.Destination destination = path.open()) {
                        double seconds = RelayDrain.drain(run, 1, destination::relayPublisher, events);
                        held[0] = destination.held();
                        return RelayThroughput.drained(events, seconds);
                    }
                });
                // The same drain reading the next page while the current one is published: what the read-ahead buys here.
                BenchmarkRun.Cell readAheadCell = new BenchmarkRun.Cell(path.name() + ": relay drain with read-ahead ("
                        + events + " events)", 1, () -> {
                    RelayDrain.fill(run, events);
                    try (BrokerPath.Destination destination = path.open()) {
                        double seconds = RelayDrain.drain(run, 1, destination::relayPublisher, events, Tracing.auto(), true);
                        held[2] = destination.held();
                        return RelayThroughput.drained(events, seconds);
                    }
                });
                BenchmarkRun.Cell rawCell = new BenchmarkRun.Cell(path.name() + ": client alone (" + events + " events)", 1, () -> {
                    RelayDrain.fill(run, events);
                    List<OutboxEvent> written = RelayDrain.written(run);
                    try (BrokerPath.Destination destination = path.open()) {
                        double seconds = destination.publishRaw(written);
                        held[1] = destination.held();
                        return RelayThroughput.drained(written.size(), seconds);
                    }
                });
                BenchmarkRun.Cell publisherCell = new BenchmarkRun.Cell(path.name() + ": publisher alone (" + events + " events)", 1,
                        () -> {
                            RelayDrain.fill(run, events);
                            List<OutboxEvent> written = RelayDrain.written(run);
                            try (BrokerPath.Destination destination = path.open()) {
                                double seconds = PublisherAlone.publish(destination, written, relay.batchSize());
                                held[3] = destination.held();
                                return RelayThroughput.drained(written.size(), seconds);
                            }
                        });
                List<Measurement> measured = run.interleaved(List.of(relayCell, readAheadCell, rawCell, publisherCell));
                Measurement drained = measured.get(0);
                Measurement readAhead = measured.get(1);
                Measurement raw = measured.get(2);
                Measurement alone = measured.get(3);
                double ratio = Targets.ratio(drained.opsPerSecond(), raw.opsPerSecond());
                double aloneRatio = Targets.ratio(alone.opsPerSecond(), raw.opsPerSecond());
                rows.add(row(path.name() + ": relay drains " + events + " events (1 relay, the library's publisher)", drained,
                        "destination holds " + held[0] + "; relay/raw " + Targets.format(ratio),
                        Targets.atLeast("relay/raw", ratio, RELAY_OVER_RAW_FLOOR)));
                rows.add(row(path.name() + ": relay with read-ahead (the next page read while the current one is published)", readAhead,
                        "destination holds " + held[2] + "; relay/raw " + Targets.format(Targets.ratio(readAhead.opsPerSecond(),
                        raw.opsPerSecond())) + "; read-ahead/without " + Targets.format(Targets.ratio(readAhead.opsPerSecond(),
                        drained.opsPerSecond())), "comparison"));
                rows.add(row(path.name() + ": the client alone publishes the same " + events + " (" + path.rawWay() + ")", raw,
                        "destination holds " + held[1], "limit"));
                rows.add(row(path.name() + ": the library's publisher alone publishes the same " + events + " in waves of at most "
                        + relay.batchSize() + ", one event per key", alone,
                        "destination holds " + held[3] + "; publisher/raw " + Targets.format(aloneRatio), "where the time goes"));
            }
        }
        run.note("Section 14: per broker, in the same rounds, one relay (pool of " + RelayBenchSettings.RELAY_POOL_SIZE
                + ", relay config " + RelayDrain.config(run, "bench-relay-0") + ") drains a backlog written and VACUUM "
                + "ANALYZEd beforehand, timed from its start until nothing is pending (its publisher connects inside that "
                + "time); and the broker's client alone publishes the same events, read back from the outbox and built into "
                + "the messages the library's publisher sends (payload, key, message id, the Outbox-* headers), timed from its "
                + "first send to its last acknowledgement on a connection opened before; and the library's publisher alone, "
                + "called as the relay calls it on the same events cut into waves (at most --relay-batch-size events, no key twice), "
                + "timed from its first call (it connects inside that time) to its last result, every result PUBLISHED. Each cell has a destination of its "
                + "own: a JetStream memory stream (duplicate window " + JetStreamStream.DUPLICATE_WINDOW.toSeconds() + " s); a "
                + "RabbitMQ direct exchange and durable classic queue, persistent messages, mandatory; a Kafka topic of "
                + KafkaPath.PARTITIONS + " partitions on a single-node broker the section starts (in a container where Docker "
                + "works, else in this JVM, sharing its cores). 'destination holds' counts what the broker kept after the cell.");
        return rows;
    }

    private static BrokerPath open(String broker, RelayBenchSettings relay) throws Exception {
        return switch (broker) {
            case "jetstream" -> new JetStreamPath(relay.natsUrl());
            case "rabbitmq" -> new RabbitMqPath(relay.rabbitMqUrl());
            case "kafka" -> new KafkaPath();
            default -> throw new IllegalArgumentException("unknown broker '" + broker + "'; known: " + RelayBenchSettings.BROKERS);
        };
    }

    private static ResultRow row(String measured, Measurement m, String compared, String target) {
        String took = String.format(Locale.ROOT, "%.2f s", m.operations() / m.opsPerSecond());
        return new ResultRow(TITLE, measured, 1, m.opsPerSecond(), null, null, ClientCost.NONE, took + "; " + compared, target);
    }
}

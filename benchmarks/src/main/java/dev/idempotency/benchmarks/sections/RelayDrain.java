package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drains a backlog with in-JVM relays: fills the run's outbox with set-based SQL, starts N
 * {@link OutboxRelay}s (each with its own small pool and publisher), and times them from start until
 * no event is pending. The time includes the relays' start (lease acquisition) but not the fill.
 */
final class RelayDrain {
    private static final Logger log = LoggerFactory.getLogger(RelayDrain.class);
    /** How often the backlog is counted once the publishers have seen every event. */
    private static final long BACKLOG_POLL_MILLIS = 20;

    private RelayDrain() {
    }

    /** Empties the outbox and relay tables, then writes {@code events} pending events over the configured keys. */
    static void fill(BenchmarkRun run, int events) {
        fill(run, events, RelayBenchSql.FILL_OUTBOX);
    }

    /** {@link #fill(BenchmarkRun, int)} with the insert {@code fillSql} (e.g. {@link RelayBenchSql#FILL_OUTBOX_TRACED}). */
    static void fill(BenchmarkRun run, int events, String fillSql) {
        String schema = run.database().schema();
        long started = System.nanoTime();
        try (HikariDataSource pool = run.database().pool("relay-fill", 1)) {
            Jdbi jdbi = Jdbi.create(pool);
            jdbi.useHandle(h -> {
                h.execute(BenchmarkSql.render(RelayBenchSql.TRUNCATE_RELAY_TABLES, schema));
                h.useTransaction(tx -> {
                    tx.execute(BenchmarkSql.render(RelayBenchSql.LOCK_FOR_BULK_WRITE, schema));
                    tx.createUpdate(BenchmarkSql.render(fillSql, schema))
                            .bind("events", events).bind("keys", run.settings().relay().partitionKeys()).execute();
                });
                h.execute(BenchmarkSql.render(RelayBenchSql.VACUUM_OUTBOX, schema));
            });
        }
        log.info("filled the outbox with {} events in {} s", events, (System.nanoTime() - started) / 1e9);
    }

    /**
     * The events of the last fill as a relay reads them from the outbox, each with its message id, for a
     * broker client to publish the same messages on its own (section 14). Headers and trace context: none,
     * as the fill writes them.
     */
    static List<OutboxEvent> written(BenchmarkRun run) {
        try (HikariDataSource pool = run.database().pool("relay-read", 1)) {
            Instant now = Instant.now();
            return Jdbi.create(pool).withHandle(h -> h.createQuery(BenchmarkSql.render(RelayBenchSql.EVENTS_AS_WRITTEN,
                            run.database().schema()))
                    .map((rs, ctx) -> new OutboxEvent(rs.getLong("id"), rs.getString("message_id"), rs.getString("tenant_id"),
                            rs.getString("topic"), rs.getString("partition_key"), rs.getString("payload"), Map.of(), now, 1))
                    .list());
        }
    }

    /** The relay configuration every section uses: the library's defaults with the run's tuning. */
    static OutboxRelayConfig config(BenchmarkRun run, String instanceId) {
        return config(run, instanceId, false);
    }

    /** {@link #config(BenchmarkRun, String)}, reading the next page ahead or not. */
    static OutboxRelayConfig config(BenchmarkRun run, String instanceId, boolean readAhead) {
        RelayBenchSettings relay = run.settings().relay();
        OutboxRelayConfig.Builder config = OutboxRelayConfig.builder()
                .schema(run.database().schema())
                .instanceId(instanceId)
                .partitions(relay.partitions())
                .batchSize(relay.batchSize())
                .maxEventsPerKey(relay.eventsPerKey())
                .readAhead(readAhead);
        if (relay.lingerMillis() != null) {
            config.linger(Duration.ofMillis(relay.lingerMillis()));
        }
        return config.build();
    }

    /**
     * Starts {@code instances} relays publishing through publishers from {@code publishers} and
     * returns the seconds until the backlog of {@code events} is 0. Fails when it is not drained within
     * a bound generous for any machine (a minute plus a millisecond per event).
     */
    static double drain(BenchmarkRun run, int instances, Supplier<Publisher> publishers, long events) throws Exception {
        return drain(run, instances, publishers, events, Tracing.auto());
    }

    /** {@link #drain(BenchmarkRun, int, Supplier, long)} by relays built with {@code tracing}. */
    static double drain(BenchmarkRun run, int instances, Supplier<Publisher> publishers, long events, Tracing tracing)
            throws Exception {
        return drain(run, instances, publishers, events, tracing, false);
    }

    /**
     * {@link #drain(BenchmarkRun, int, Supplier, long, Tracing)} by relays that read their next page ahead or
     * not ({@code OutboxRelayConfig.readAhead}).
     */
    static double drain(BenchmarkRun run, int instances, Supplier<Publisher> publishers, long events, Tracing tracing,
                        boolean readAhead) throws Exception {
        AtomicLong published = new AtomicLong();
        List<HikariDataSource> pools = new ArrayList<>();
        List<Publisher> opened = new ArrayList<>();
        List<OutboxRelay> relays = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + TimeUnit.MILLISECONDS.toNanos(events);
        try (HikariDataSource monitorPool = run.database().pool("relay-backlog", 1)) {
            OutboxBacklog backlog = OutboxBacklog.builder(monitorPool).schema(run.database().schema()).build();
            for (int i = 0; i < instances; i++) {
                pools.add(run.database().pool("relay-" + i, RelayBenchSettings.RELAY_POOL_SIZE));
                Publisher publisher = publishers.get();
                opened.add(publisher);
                relays.add(OutboxRelay.builder(pools.get(i), new CountingPublisher(publisher, published))
                        .config(config(run, "bench-relay-" + i, readAhead)).tracing(tracing).build());
            }
            long started = System.nanoTime();
            relays.forEach(OutboxRelay::start);
            long lastLog = started;
            while (published.get() < events || backlog.pendingCount() > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("relays did not drain " + events + " events in time: "
                            + published.get() + " published, " + backlog.pendingCount() + " pending");
                }
                if (System.nanoTime() - lastLog > TimeUnit.SECONDS.toNanos(10)) {
                    lastLog = System.nanoTime();
                    log.info("{} relay(s): {} of {} published", instances, published.get(), events);
                }
                Thread.sleep(BACKLOG_POLL_MILLIS);
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            if (published.get() > events) {
                log.info("{} relay(s) published {} events for a backlog of {} (at least once)", instances, published.get(), events);
            }
            return seconds;
        } finally {
            relays.forEach(OutboxRelay::stop);
            opened.forEach(Publisher::close);
            pools.forEach(HikariDataSource::close);
        }
    }
}

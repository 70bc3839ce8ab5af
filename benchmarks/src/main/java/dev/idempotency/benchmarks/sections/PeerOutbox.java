package dev.idempotency.benchmarks.sections;

import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Persistor;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.ThreadLocalContextTransactionManager;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSettings;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Section 7: a peer outbox. gruelbox transaction-outbox, on the same PostgreSQL in a schema of its
 * own (its tables created by its own migrations), is given the same number of events (100,000 by
 * default) with a no-op invocation target and drained by its flush and executor submitter; ours
 * drains the same count with one relay to the no-op publisher. Reported as ours / theirs events/s.
 */
final class PeerOutbox implements Section {
    /** Threads the peer's submitter runs entries on; its pool has two more connections for flush and scheduling. */
    private static final int PEER_WORKERS = 4;
    private static final int PEER_POOL_SIZE = PEER_WORKERS + 2;
    /** Entries scheduled per transaction while filling the peer's outbox (not timed). */
    private static final int SCHEDULE_CHUNK = 1_000;
    private static final Logger log = LoggerFactory.getLogger(PeerOutbox.class);

    @Override
    public String name() {
        return "peer";
    }

    @Override
    public String title() {
        return "7 peer outbox";
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        int events = run.settings().relay().peerEvents();
        Measurement ours = RelayThroughput.noOp(run, events, 1);
        Measurement theirs = run.cell("gruelbox transaction-outbox drain", 1, () -> drainPeer(run, events));
        double ratio = Targets.ratio(ours.opsPerSecond(), theirs.opsPerSecond());
        run.note("Section 7: gruelbox transactionoutbox-core 4.2.268 (the newest on Maven Central), Dialect.POSTGRESQL_9, its DefaultPersistor and migrations in "
                + "schema <run schema>_peer, Submitter.withExecutor(" + PEER_WORKERS + " threads), pool of " + PEER_POOL_SIZE
                + " connections, flush() called in a loop (it sleeps 5 ms when a flush finds nothing); entries scheduled "
                + SCHEDULE_CHUNK + " per transaction before timing. Ours: one relay, pool of "
                + RelayBenchSettings.RELAY_POOL_SIZE + ". Both timed until their outbox holds nothing pending.");
        return List.of(
                new ResultRow(title(), "ours: 1 relay drains " + events + " events, no-op publisher", 1, ours.opsPerSecond(),
                        null, null, ClientCost.NONE, String.format(Locale.ROOT, "%.1f s", events / ours.opsPerSecond()), ""),
                new ResultRow(title(), "gruelbox transaction-outbox drains " + events + " events, no-op target", 1,
                        theirs.opsPerSecond(), null, null, ClientCost.NONE,
                        String.format(Locale.ROOT, "%.1f s; ours/theirs %s", events / theirs.opsPerSecond(), Targets.format(ratio)),
                        "reported only"));
    }

    private static Measurement drainPeer(BenchmarkRun run, int events) throws Exception {
        String schema = run.database().schema() + "_peer";
        NoOpTarget target = new NoOpTarget();
        ExecutorService workers = Executors.newFixedThreadPool(PEER_WORKERS);
        try (HikariDataSource pool = peerPool(run, schema)) {
            Jdbi jdbi = Jdbi.create(pool);
            ThreadLocalContextTransactionManager transactions = TransactionManager.fromDataSource(pool);
            TransactionOutbox outbox = TransactionOutbox.builder()
                    .transactionManager(transactions)
                    .persistor(Persistor.forDialect(Dialect.POSTGRESQL_9))
                    .instantiator(Instantiator.using(type -> target))
                    .submitter(Submitter.withExecutor(workers))
                    .attemptFrequency(Duration.ofMinutes(2))
                    .build();
            long filling = System.nanoTime();
            for (int done = 0; done < events; done += SCHEDULE_CHUNK) {
                int from = done;
                int to = Math.min(events, done + SCHEDULE_CHUNK);
                transactions.inTransaction(() -> {
                    for (int seq = from; seq < to; seq++) {
                        outbox.schedule(NoOpTarget.class).handle(seq);
                    }
                });
            }
            log.info("scheduled {} gruelbox entries in {} s", events, (System.nanoTime() - filling) / 1e9);
            // Entries become due a moment after they are scheduled (nextAttemptTime is in the future); wait for that untimed.
            Thread.sleep(100);
            String countPending = BenchmarkSql.render(RelayBenchSql.COUNT_PEER_ENTRIES, schema);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + TimeUnit.MILLISECONDS.toNanos(events * 5L);
            long started = System.nanoTime();
            while (target.handled.get() < events
                    || jdbi.withHandle(h -> h.createQuery(countPending).mapTo(Long.class).one()) > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("gruelbox did not drain " + events + " entries in time: "
                            + target.handled.get() + " handled");
                }
                if (!outbox.flush()) {
                    Thread.sleep(5);
                }
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            return RelayThroughput.drained(events, seconds);
        } finally {
            workers.shutdownNow();
            workers.awaitTermination(30, TimeUnit.SECONDS);
            try (HikariDataSource admin = run.database().pool("peer-admin", 1)) {
                Jdbi.create(admin).useHandle(h -> h.execute(BenchmarkSql.render(RelayBenchSql.DROP_SCHEMA, schema)));
            }
        }
    }

    /** A pool whose connections default to the peer's own schema, which it creates first. */
    private static HikariDataSource peerPool(BenchmarkRun run, String schema) {
        try (HikariDataSource admin = run.database().pool("peer-admin", 1)) {
            Jdbi.create(admin).useHandle(h -> {
                h.execute(BenchmarkSql.render(RelayBenchSql.DROP_SCHEMA, schema));
                h.execute(BenchmarkSql.render(RelayBenchSql.CREATE_SCHEMA, schema));
            });
        }
        BenchmarkSettings settings = run.settings();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings.jdbcUrl());
        if (settings.dbUser() != null) {
            config.setUsername(settings.dbUser());
        }
        if (settings.dbPassword() != null) {
            config.setPassword(settings.dbPassword());
        }
        config.setPoolName("peer-gruelbox");
        config.setMaximumPoolSize(PEER_POOL_SIZE);
        config.setMinimumIdle(PEER_POOL_SIZE);
        // Its tables are unqualified (TXNO_OUTBOX); the schema of its own keeps them apart from ours.
        config.setSchema(schema);
        // gruelbox commits and rolls back itself, on connections it expects not to autocommit.
        config.setAutoCommit(false);
        return new HikariDataSource(config);
    }

    /**
     * The peer's invocation target: does nothing but count, as the no-op publisher does for ours.
     * Public and not final because gruelbox proxies it to record calls.
     */
    public static class NoOpTarget {
        final AtomicLong handled = new AtomicLong();

        /** Counts one handled entry. */
        public void handle(int seq) {
            handled.incrementAndGet();
        }
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.core.internal.SchemaNames;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the tables clean: fails {@code processing} keys whose lease ran out (their outcome is
 * unknown, so a retry sees a failure instead of running the external step again; such a key is
 * kept, whatever its retention, until an operator resolves it with {@link UnknownOutcomes}),
 * deletes settled keys past their retention, and deletes published outbox events past theirs. Every statement touches at most
 * one batch and commits on its own, so no lock is held long; rows another sweeper or a caller holds
 * are skipped, so several instances can run side by side.
 */
public final class Sweeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

    /**
     * Rows per statement unless {@link Builder#batchSize} says otherwise. With the other defaults a
     * sweep purges up to 5,000,000 rows of each kind; measured (benchmarks, section 8) that sustains
     * well over the 19,000 events/s three relays publish on a 2-core machine.
     */
    public static final int DEFAULT_BATCH_SIZE = 5000;
    /** Batches of each kind per sweep unless {@link Builder#maxBatchesPerSweep} says otherwise. */
    public static final int DEFAULT_MAX_BATCHES_PER_SWEEP = 1000;
    /** Pause between sweeps unless {@link Builder#interval} says otherwise. */
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(30);

    /** What one sweep changed. */
    public record Result(int leasesFailed, int keysPurged, int eventsPurged) {
    }

    private final Jdbi jdbi;
    private final String schema;
    private final ExecutorSql sql;
    private final int batchSize;
    private final int maxBatches;
    private final Duration interval;
    private final double publishedEventRetentionSeconds;
    private ScheduledExecutorService scheduler;
    /** Set by {@link #close()}: a long sweep under way stops after its current batch. */
    private volatile boolean closed;

    private Sweeper(Builder builder) {
        this.jdbi = builder.jdbi;
        this.schema = builder.schema;
        this.sql = new ExecutorSql(builder.schema);
        this.batchSize = builder.batchSize;
        this.maxBatches = builder.maxBatchesPerSweep;
        this.interval = builder.interval;
        this.publishedEventRetentionSeconds = builder.publishedEventRetention.toMillis() / 1000.0;
    }

    /** A sweeper on {@code dataSource}, with defaults: schema {@code idempotency}, up to 1,000 batches of 5,000 rows of each kind every 30 s. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(RedactedErrors.withoutArgumentsInMessages(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource"))));
    }

    /**
     * Sweeps once, batch by batch, until each kind of work is done or {@code maxBatchesPerSweep}
     * batches of it ran.
     *
     * @throws SchemaNotMigratedException the tables are not in the configured schema
     */
    public Result sweepOnce() {
        int leases;
        int keys;
        int events;
        try {
            leases = repeat(sql.failExpiredLeases, false);
            keys = repeat(sql.purgeExpiredKeys, false);
            events = repeat(sql.purgePublishedEvents, true);
        } catch (RuntimeException e) {
            throw DatabaseErrors.schemaMissing(e, schema, "Sweeper.Builder.schema");
        }
        if (leases + keys + events > 0) {
            log.info("sweep: {} expired leases failed, {} expired keys purged, {} published events purged", leases, keys, events);
        }
        return new Result(leases, keys, events);
    }

    private int repeat(String statement, boolean withEventRetention) {
        int total = 0;
        for (int batch = 0; batch < maxBatches && !closed; batch++) {
            int changed = jdbi.withHandle(h -> {
                var update = h.createUpdate(statement).bind("batchSize", batchSize);
                if (withEventRetention) {
                    update.bind("retentionSeconds", publishedEventRetentionSeconds);
                }
                return update.execute();
            });
            total += changed;
            if (changed < batchSize) {
                break;
            }
        }
        return total;
    }

    /** Sweeps every {@code interval} on a daemon thread of its own until {@link #close()}. */
    public synchronized void start() {
        if (scheduler != null) {
            throw new IllegalStateException("this sweeper is already running");
        }
        if (closed) {
            throw new IllegalStateException("this sweeper was closed; build a new one");
        }
        scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "idempotency-sweeper");
            thread.setDaemon(true);
            return thread;
        });
        scheduler.scheduleWithFixedDelay(this::sweepLogged, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void sweepLogged() {
        try {
            sweepOnce();
        } catch (SchemaNotMigratedException e) {
            log.warn("sweep failed; retrying in {}: {}", interval, e.getMessage());
        } catch (RuntimeException e) {
            // The database may be restarting; the next sweep tries again.
            log.warn("sweep failed; retrying in {}", interval, RedactedErrors.redact(e));
        }
    }

    /** Stops the schedule, letting a sweep under way finish its current batch; a closed sweeper sweeps no more. */
    @Override
    public synchronized void close() {
        closed = true;
        if (scheduler != null) {
            scheduler.shutdown();
            try {
                if (!scheduler.awaitTermination(30, TimeUnit.SECONDS)) {
                    scheduler.shutdownNow();
                }
            } catch (InterruptedException e) {
                scheduler.shutdownNow();
                Thread.currentThread().interrupt();
            }
            scheduler = null;
        }
    }

    /** Settings of a {@link Sweeper}, validated at {@link #build()}. */
    public static final class Builder {
        private final Jdbi jdbi;
        private String schema = SchemaNames.DEFAULT;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int maxBatchesPerSweep = DEFAULT_MAX_BATCHES_PER_SWEEP;
        private Duration interval = DEFAULT_INTERVAL;
        private Duration publishedEventRetention = Duration.ofHours(24);

        private Builder(Jdbi jdbi) {
            this.jdbi = jdbi;
        }

        /** The schema the migrations were applied to. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /** Rows per statement; 1 to 100,000. Smaller batches hold locks for less time. */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /** Upper bound on batches of each kind per sweep, so one sweep cannot run unbounded; 1 to 100,000. */
        public Builder maxBatchesPerSweep(int maxBatchesPerSweep) {
            this.maxBatchesPerSweep = maxBatchesPerSweep;
            return this;
        }

        /** Pause between sweeps when started; at least 10 ms. */
        public Builder interval(Duration interval) {
            this.interval = interval;
            return this;
        }

        /** How long published outbox events are kept; zero deletes them at the next sweep. */
        public Builder publishedEventRetention(Duration publishedEventRetention) {
            this.publishedEventRetention = publishedEventRetention;
            return this;
        }

        public Sweeper build() {
            SchemaNames.require(schema);
            requireRange("batchSize", batchSize);
            requireRange("maxBatchesPerSweep", maxBatchesPerSweep);
            Objects.requireNonNull(interval, "interval");
            if (interval.toMillis() < 10) {
                throw new IllegalArgumentException("interval must be at least 10 ms (was " + interval + ")");
            }
            Objects.requireNonNull(publishedEventRetention, "publishedEventRetention");
            if (publishedEventRetention.isNegative()) {
                throw new IllegalArgumentException("publishedEventRetention must not be negative (was " + publishedEventRetention + ")");
            }
            return new Sweeper(this);
        }

        private static void requireRange(String name, int value) {
            if (value < 1 || value > 100_000) {
                throw new IllegalArgumentException(name + " must be between 1 and 100000 (was " + value + ")");
            }
        }
    }
}

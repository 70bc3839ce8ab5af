package dev.idempotency.jdbc;

import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.core.internal.SchemaNames;
import dev.idempotency.jdbc.internal.RedactedErrors;
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
 * deletes settled keys past their retention, and removes outbox events past theirs. Key statements
 * touch at most one batch and commit on their own, so no lock is held long; rows another sweeper or
 * a caller holds are skipped, so several instances can run side by side. Events go a whole
 * generation table at a time, by TRUNCATE, and only once the relays consumed every event in it
 * (see {@link Builder#publishedEventRetention}); retries and dead letters are never removed.
 */
public final class Sweeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

    /**
     * Keys per statement unless {@link Builder#batchSize} says otherwise. With the other defaults a
     * sweep purges up to 5,000,000 expired keys; measured (benchmarks, section 8) that sustains about
     * 60,000 keys/s on a 2-core machine.
     */
    public static final int DEFAULT_BATCH_SIZE = 5000;
    /** Batches of keys of each kind per sweep unless {@link Builder#maxBatchesPerSweep} says otherwise. */
    public static final int DEFAULT_MAX_BATCHES_PER_SWEEP = 1000;
    /** Pause between sweeps unless {@link Builder#interval} says otherwise. */
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(30);

    /**
     * What one sweep changed; {@code eventsPurged} is how many events the generation it truncated held
     * (0 when it truncated none).
     */
    public record Result(int leasesFailed, int keysPurged, int eventsPurged) {
    }

    private final Jdbi jdbi;
    private final String schema;
    private final ExecutorSql.SweeperStatements sql;
    private final int batchSize;
    private final int maxBatches;
    private final Duration interval;
    private final GenerationRotation rotation;
    private ScheduledExecutorService scheduler;
    /** Set by {@link #close()}: a long sweep under way stops after its current batch. */
    private volatile boolean closed;

    private Sweeper(Builder builder) {
        this.jdbi = builder.jdbi;
        this.schema = builder.schema;
        this.sql = new ExecutorSql.SweeperStatements(builder.schema);
        this.batchSize = builder.batchSize;
        this.maxBatches = builder.maxBatchesPerSweep;
        this.interval = builder.interval;
        this.rotation = new GenerationRotation(jdbi, sql, builder.publishedEventRetention);
    }

    /**
     * A sweeper on {@code dataSource}, with defaults: schema {@code idempotency}, up to 1,000 batches of
     * 5,000 keys of each kind every 30 s, events kept 24 hours.
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(RedactedErrors.withoutArgumentsInMessages(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource"))));
    }

    /**
     * Sweeps once: keys batch by batch, until each kind of work is done or {@code maxBatchesPerSweep}
     * batches of it ran; then the outbox's generations, if a rotation is due. A rotation refused
     * (events not consumed yet) or that could not get its lock within a second is logged at WARN
     * and tried again at the next sweep.
     *
     * @throws SchemaNotMigratedException the tables are not in the configured schema
     */
    public Result sweepOnce() {
        int leases;
        int keys;
        int events;
        try {
            leases = repeat(sql.failExpiredLeases);
            keys = repeat(sql.purgeExpiredKeys);
            events = closed ? 0 : (int) Math.min(Integer.MAX_VALUE, rotation.rotateIfDue());
        } catch (RuntimeException e) {
            throw DatabaseErrors.schemaMissing(e, schema, "Sweeper.Builder.schema");
        }
        if (leases + keys + events > 0) {
            log.info("sweep: {} expired leases failed, {} expired keys purged, {} outbox events removed", leases, keys, events);
        }
        return new Result(leases, keys, events);
    }

    private int repeat(String statement) {
        int total = 0;
        for (int batch = 0; batch < maxBatches && !closed; batch++) {
            int changed = jdbi.withHandle(h -> h.createUpdate(statement).bind("batchSize", batchSize).execute());
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

        /** Keys per statement; 1 to 100,000. Smaller batches hold locks for less time. Events are not deleted by rows. */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /** Upper bound on batches of keys of each kind per sweep, so one sweep cannot run unbounded; 1 to 100,000. */
        public Builder maxBatchesPerSweep(int maxBatchesPerSweep) {
            this.maxBatchesPerSweep = maxBatchesPerSweep;
            return this;
        }

        /** Pause between sweeps when started; at least 10 ms. */
        public Builder interval(Duration interval) {
            this.interval = interval;
            return this;
        }

        /**
         * How long outbox events are kept at least, from their {@code created_at}. The outbox's three
         * generation tables rotate every half retention (a sweep truncates the next one if due), so an
         * event goes between one and one and a half retentions after it was written (plus up to three
         * sweep intervals), and never before the relays consumed it: a generation holding an event not
         * consumed yet is not truncated (WARN) until they have. Zero: each sweep rotates once, so an
         * event goes within three sweeps, once consumed.
         */
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

package dev.idempotency.outbox;

import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException;
import dev.idempotency.jdbc.internal.PoolerProbe;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlStatements;
import org.jdbi.v3.core.statement.TemplateEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes committed outbox events through a {@link Publisher}, at least once and, per ordering key
 * {@code (tenant, topic, partition key)}, in outbox id order, with any number of relays on one
 * database. Events are only marked published after the broker acknowledged them, so a crash,
 * database restart or broker outage at any point leads to a duplicate, never a loss; consumers drop
 * duplicates by {@code OutboxEvent.messageId()}.
 *
 * <h2>How work is split</h2>
 * The outbox is split into {@link OutboxRelayConfig#partitions()} virtual partitions by the hash of
 * the ordering key. Each relay heartbeats, renews its partition leases (database clock) every
 * {@link OutboxRelayConfig#renewalInterval()}, and moves toward a fair share: it releases excess
 * partitions between batches and takes free ones, or those whose lease ran out, which is how a dead
 * relay's partitions are taken over within about {@code leaseDuration + renewalInterval}. Every
 * takeover increments the partition's epoch. No transaction or row lock is held while a broker
 * call is outstanding: claims are plain reads and every write is a single autocommit statement.
 *
 * <h2>Batches</h2>
 * Writers only insert into the outbox; the relay writes nothing per event it publishes. Each
 * partition has a position in {@code outbox_relay_partitions}: a consumed snapshot, and while a batch
 * is under way that batch's snapshot and an id cursor. A batch is every event whose transaction is
 * visible in a new snapshot and was not in the consumed one (found by the {@code txid} index), read
 * in id order in pages of {@link OutboxRelayConfig#batchSize()}, cut so that no key has more than
 * {@link OutboxRelayConfig#maxEventsPerKey()} events in a page. Every writer of one ordering key (the
 * executor, plain SQL, a trigger: migration V8's trigger takes the lock for any INSERT) draws its id
 * under an advisory lock held to commit, so per key id order is commit order and a key's events
 * never become visible out of order; a transaction still open when the batch's snapshot is taken
 * (however long it runs) is in a later batch. A page is published in waves of at most one event per
 * key (a key's next event only after the broker acknowledged the previous one), with the broker's
 * acknowledgements of a wave awaited together, then the position moves with one fenced statement.
 * With read-ahead on ({@link OutboxRelayConfig#readAhead()}, off by default), behind a backlog the next
 * page is read while the current one is published, from the position the current one leaves, and
 * published only if the current one settled whole under the same leases (else it is read again); the
 * keys the current one moved to outbox_retries are held back in it.
 *
 *  * <h2>Fencing, and the window that remains</h2>
 * Every write of the relay (a position, retries, dead letters) is one statement that also checks that
 * this relay still holds the partition with the epoch it claimed under and an unexpired lease; when
 * that check fails the relay drops the partition and the new owner publishes the events again from the
 * stored position.
 * Before each publish call the relay also checks, on the local monotonic clock, that the lease
 * outlasts a whole publish call plus a safety margin ({@link OutboxRelayConfig#leaseSafetyMargin()}),
 * measured from before the renewal was sent; a relay that was paused finds its deadline passed and
 * stops publishing. What remains: brokers do not check our epochs, so a pause that starts after that
 * local check and lasts beyond the lease (or a publisher that overruns its own declared limit, whose
 * call the relay stops waiting for but cannot recall) can still let an old owner's message reach the broker after
 * the new owner started on the same partition. Such a message is always a copy of an event whose
 * predecessors of its key were already published (or dead-lettered), so the order of first
 * publications per key holds and
 * consumers that deduplicate by message id see no difference; a consumer that does not deduplicate
 * may see that event twice, the second time after later events of its key.
 *
 * <h2>When the database's history moves</h2>
 * Positions count transaction ids, which belong to one server's history. Every read and write of a
 * position is gated by the token of the server's current run (migration V7), which a restart, crash
 * recovery, failover to a standby or restore changes: the relay then forgets the positions it held in
 * memory and goes on from the stored ones, which hold on any history that contains them. Positions that
 * were written on another server (a dump restored here, a logical-replication cut-over) are found at
 * start and at every such change, and every event still in the outbox is published again from the
 * start, in key order; the sweeper never counts events as consumed by them.
 *
 * <h2>Retries and dead letters</h2>
 * An event whose attempt fails is copied to {@code outbox_retries} with its backoff, and so are its
 * key's later events as the relay reaches them, so the position goes on for every other key; the
 * relay retries them there in id order per key, with exponential backoff and jitter, and deletes
 * each once published. After {@link OutboxRelayConfig#maxAttempts()} attempts, at once when
 * the publisher rejects it, or when the row cannot be decoded, it is dead-lettered with its last
 * error and its key goes on; {@link OutboxDeadLetters} lists and requeues dead letters.
 *
 * <h2>Broker outages</h2>
 * A publish result of {@code UNAVAILABLE} (the broker cannot be reached) is no attempt: the position
 * stops before the event, and the relay pauses all publishing with exponential backoff (from
 * {@link OutboxRelayConfig#backoffBase()}, doubling, at most the smaller of
 * {@link OutboxRelayConfig#backoffMax()} and 30 s) until a call reaches the broker again, so an outage
 * of any length dead-letters nothing and publishing resumes in order. The outage is logged once when
 * it starts and once when it ends.
 *
 * <h2>Time limits</h2>
 * A publisher that declares {@code Publisher.maxCallDuration()} owns the limit on one call: the
 * relay waits that long plus a margin (unless {@link OutboxRelayConfig#publishTimeout()} was set
 * longer), and refuses to be created when an explicit publish timeout is shorter or the lease too
 * short for it. A call that outlasts the bound is not overlapped: until it returns, the relay treats
 * the publisher as unavailable.
 *
 * <h2>Waking up</h2>
 * The relay polls adaptively ({@link OutboxRelayConfig#idlePollMin()} doubling up to
 * {@link OutboxRelayConfig#idlePollMax()}); {@link #wakeUp()} is the in-process signal an executor
 * in the same JVM calls after a commit that wrote outbox events. {@code LISTEN/NOTIFY} is not used:
 * a transaction that issues {@code NOTIFY} takes a database-wide lock at commit. Under a steady
 * stream it reads at most once per {@link OutboxRelayConfig#linger()} (wake-ups do not cut that
 * short), so that its reads do not grow with the writers' commit rate, and writes its positions at
 * most once per {@link OutboxRelayConfig#positionWriteInterval()}.
 *
 * <h2>Statistics</h2>
 * On a schema with migration V10 the relay counts the events it published and their commit-to-publish
 * latency in memory, and adds them to its row of {@code outbox_relay_stats} about every 10 seconds (one
 * statement, from the lease thread; a failed write is logged and its counts dropped) and when it stops,
 * for the console of any process. On an older schema it records nothing and says so once at INFO.
 *
 * <p>The relay runs on three daemon threads of its own (leases, worker, publish calls; a fourth reads the
 * next page ahead when {@link OutboxRelayConfig#readAhead()} is on, started behind the first backlog) and
 * uses at most two connections of the given pool at a time (the worker waits for the page read ahead
 * before its own next statement); a pool of its own (or room for those two in a shared one) keeps lease
 * renewals from queueing behind other work. It closes neither the data source nor the publisher. A
 * relay starts once; after {@link #stop()} make a new one.
 */
public final class OutboxRelay implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(OutboxRelay.class);

    private enum State { NEW, RUNNING, STOPPING, STOPPED }

    private final OutboxRelayConfig config;
    private final Jdbi jdbi;
    private final OutboxSchemaCheck schemaCheck;
    private final PartitionLeases leases;
    private final OutboxPositions positions;
    private final OutboxDispatcher dispatcher;
    private final TimeLimitedPublisher publisher;
    private final IdleWait idle;
    private final PublisherOutage outage;
    private final RelayStats stats;
    private final ScheduledExecutorService leaseKeeper;
    private final Thread worker;
    private State state = State.NEW;
    private volatile boolean stopping;
    private volatile boolean halted;
    private int leaseFailures;

    /**
     * A builder of a relay over the outbox tables of {@code dataSource}, publishing through
     * {@code publisher}; by default with {@code OutboxRelayConfig.builder().build()} and no listener.
     */
    public static Builder builder(DataSource dataSource, Publisher publisher) {
        return new Builder(dataSource, publisher);
    }

    private OutboxRelay(DataSource dataSource, Publisher publisher, OutboxRelayConfig config, OutboxRelayListener listener,
                        Tracing tracing) {
        // The publisher's own time limit decides how long a call may take; refused here if they disagree.
        config = PublishCallBound.apply(config, publisher);
        this.config = config;
        this.jdbi = jdbi(dataSource, config);
        String id = config.instanceId();
        RelaySql sql = new RelaySql(config.schema());
        this.schemaCheck = new OutboxSchemaCheck(jdbi, config.schema(), sql);
        this.leases = new PartitionLeases(jdbi, config, sql);
        this.publisher = new TimeLimitedPublisher(publisher, config.publishTimeout(), "outbox-relay-publish-" + id,
                Traces.of(tracing));
        this.outage = new PublisherOutage(id, config.backoffBase(), config.backoffMax());
        this.positions = new OutboxPositions(dataSource, jdbi, config, sql);
        this.stats = new RelayStats(jdbi, sql, id);
        this.dispatcher = new OutboxDispatcher(positions, new RetryQueue(jdbi, config, sql), leases,
                this.publisher, config, listener, outage, stats);
        this.idle = new IdleWait(config.idlePollMin(), config.idlePollMax(), config.linger());
        this.leaseKeeper = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "outbox-relay-leases-" + id));
        this.worker = daemon(this::work, "outbox-relay-worker-" + id);
    }

    /** Jdbi over the pool: SQL is pre-rendered (no templating), and no statement outlives a lease. */
    static Jdbi jdbi(DataSource dataSource, OutboxRelayConfig config) {
        // Its statements bind publish errors (a broker's or webhook's reply text): never into a message.
        Jdbi jdbi = RedactedErrors.withoutArgumentsInMessages(Jdbi.create(dataSource));
        jdbi.setTemplateEngine(TemplateEngine.NOP);
        jdbi.getConfig(SqlStatements.class).setQueryTimeout(queryTimeoutSeconds(config));
        return jdbi;
    }

    /** The query timeout of every statement of the relay: none outlives a lease. */
    static int queryTimeoutSeconds(OutboxRelayConfig config) {
        return (int) Math.max(1, config.leaseDuration().toSeconds());
    }

    /**
     * Checks the connection pooler in front of PostgreSQL, if any, the outbox table, and the
     * partition table (creating its rows on first use), and starts the threads. Fails, and starts
     * nothing, when the database is unreachable or holds another partition count.
     *
     * @throws PoolerBreaksPreparedStatementsException when a pooler (PgBouncer in transaction mode
     *         without {@code max_prepared_statements}) would run this relay's named statements on
     *         other clients' backends; the message names the fix
     * @throws OutboxSchemaException when the outbox table predates this relay's migrations, its id
     *         sequence caches ids (CACHE other than 1), which would break per-key order, or is behind the
     *         ids the outbox holds (a logical replica's copy); the message names the fix
     * @throws IllegalStateException when the DataSource hands out connections with autocommit off (each
     *         of the relay's statements is a transaction of its own); the message names the fix
     */
    public synchronized void start() {
        if (state != State.NEW) {
            throw new IllegalStateException("relay " + config.instanceId() + " was already started");
        }
        positions.requireAutocommit();
        PoolerProbe.check(jdbi, "outbox relay " + config.instanceId());
        boolean recordsStats = schemaCheck.verify();
        leases.prepare();
        // Before the worker reads: positions from another server are rebased, a sequence behind its rows refused.
        positions.validateServer();
        stats.start(recordsStats, config.schema());
        state = State.RUNNING;
        leaseKeeper.scheduleWithFixedDelay(this::keepLeases, 0, config.renewalInterval().toNanos(), TimeUnit.NANOSECONDS);
        worker.start();
        log.info("outbox relay started: {}", config);
    }

    /** Ends the current idle wait so committed events are claimed now. Cheap; safe from any thread. */
    public void wakeUp() {
        idle.wakeUp();
    }

    /**
     * Graceful stop: finishes and records the cycle in flight (a retry round and a page), releases this
     * relay's partitions so another instance takes them at once, and returns. If the cycle does not
     * finish within {@code leaseDuration + 2 * maxEventsPerKey * publishTimeout}, the relay gives up
     * waiting and leaves its leases to lapse instead of releasing partitions it may still be publishing. Returns at once
     * when the relay was never started or is already stopping or stopped.
     */
    public void stop() {
        synchronized (this) {
            if (state == State.NEW) {
                state = State.STOPPED;
                leaseKeeper.shutdownNow();
                publisher.shutdown();
            }
            if (state != State.RUNNING) {
                return;
            }
            state = State.STOPPING;
        }
        leases.stopAcquiring();
        stopping = true;
        idle.stop();
        Duration bound = config.leaseDuration().plus(config.publishTimeout().multipliedBy(2L * config.maxEventsPerKey()));
        boolean finished = join(worker, bound);
        leaseKeeper.shutdown();
        awaitTermination(leaseKeeper, config.leaseDuration());
        stats.flush();
        if (finished) {
            try {
                leases.releaseAll();
            } catch (RuntimeException e) {
                log.warn("relay {} could not release its partitions; they lapse after {}",
                        config.instanceId(), config.leaseDuration(), e);
            }
        } else {
            log.warn("relay {} did not finish its batch within {}; its partitions lapse after {}",
                    config.instanceId(), bound, config.leaseDuration());
            worker.interrupt();
        }
        try {
            leases.deregister();
        } catch (RuntimeException e) {
            log.warn("relay {} could not remove its heartbeat row", config.instanceId(), e);
        }
        publisher.shutdown();
        synchronized (this) {
            state = State.STOPPED;
        }
        log.info("outbox relay {} stopped", config.instanceId());
    }

    /** Same as {@link #stop()}. */
    @Override
    public void close() {
        stop();
    }

    /** This relay's instance id. */
    public String instanceId() {
        return config.instanceId();
    }

    /** The virtual partitions this relay holds right now. */
    public Set<Integer> heldPartitions() {
        return leases.held();
    }

    /** How many pages this relay published as read ahead while it published the page before them (for tests). */
    long pagesReadAhead() {
        return dispatcher.pagesReadAhead();
    }

    /**
     * Stops at once, as a crash would: threads are interrupted, nothing more is published, released
     * or deregistered, and the leases lapse after the lease duration. For tests of failover.
     */
    void halt() {
        synchronized (this) {
            state = State.STOPPED;
        }
        halted = true;
        leases.forgetAll();
        leaseKeeper.shutdownNow();
        worker.interrupt();
        publisher.shutdown();
        join(worker, Duration.ofSeconds(10));
        awaitTermination(leaseKeeper, Duration.ofSeconds(10));
    }

    private void keepLeases() {
        if (halted) {
            return;
        }
        try {
            if (leases.maintain() || leases.releaseRequested()) {
                idle.wakeUp();
            }
            leaseFailures = 0;
        } catch (RuntimeException e) {
            logFailure(++leaseFailures, "could not renew its leases (retrying in " + config.renewalInterval() + ")", e);
        }
        // On this thread, after the renewal: the worker never waits for a flush.
        stats.flushIfDue();
    }

    private void work() {
        try {
            workUntilStopped();
        } finally {
            dispatcher.close();
        }
    }

    private void workUntilStopped() {
        int failures = 0;
        while (!stopping && !halted) {
            try {
                if (leases.releaseRequested()) {
                    dispatcher.writePositions();
                    leases.releaseRequestedPartitions();
                }
                long readStarted = System.nanoTime();
                if (dispatcher.dispatchBatch() == 0) {
                    idle.await();
                } else if (outage.active()) {
                    awaitOutageDelay();
                } else {
                    idle.reset();
                    if (dispatcher.caughtUp()) {
                        idle.linger(readStarted);
                    }
                }
                failures = 0;
            } catch (InterruptedException e) {
                if (!halted) {
                    log.warn("relay {} worker interrupted; stopping it", config.instanceId());
                }
                return;
            } catch (RuntimeException e) {
                if (halted) {
                    return;
                }
                logFailure(++failures, "batch failed (retrying in up to " + config.idlePollMax() + ")", e);
                try {
                    idle.awaitAfterError();
                } catch (InterruptedException interrupted) {
                    return;
                }
            }
        }
        if (!halted) {
            try {
                // A graceful stop releases the partitions next: their next owner goes on from here.
                dispatcher.writePositions();
            } catch (RuntimeException e) {
                log.warn("relay {} could not write its last positions; their next owner publishes the events since"
                        + " its last write again", config.instanceId(), e);
            }
        }
    }

    /** Waits out one step of an outage's backoff; commits do not cut it short, stopping does. */
    private void awaitOutageDelay() throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(outage.nextDelayMillis());
        while (!stopping && !halted && System.nanoTime() < until) {
            Thread.sleep(Math.max(1, Math.min(50, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()))));
        }
    }

    /** The first failure in a row is logged with its stack trace; the rest of an outage in one line each. */
    private void logFailure(int inARow, String what, RuntimeException failure) {
        // PostgreSQL's detail ("Failing row contains ...") would quote payloads and publish errors.
        RuntimeException e = RedactedErrors.redact(failure);
        if (inARow == 1) {
            log.warn("relay {} {}", config.instanceId(), what, e);
        } else {
            log.warn("relay {} {} ({} failures in a row): {}", config.instanceId(), what, inARow, e.toString());
        }
    }

    private static Thread daemon(Runnable task, String name) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        return thread;
    }

    private static boolean join(Thread thread, Duration bound) {
        try {
            thread.join(Math.max(1, bound.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    private static void awaitTermination(ScheduledExecutorService executor, Duration bound) {
        try {
            executor.awaitTermination(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Collects a relay's optional settings; {@link #build()} checks them against the publisher. */
    public static final class Builder {
        private final DataSource dataSource;
        private final Publisher publisher;
        private OutboxRelayConfig config;
        private OutboxRelayListener listener = OutboxRelayListener.NONE;
        private Tracing tracing = Tracing.auto();

        private Builder(DataSource dataSource, Publisher publisher) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
            this.publisher = Objects.requireNonNull(publisher, "publisher");
        }

        /** The relay's settings, schema included; default {@code OutboxRelayConfig.builder().build()}. */
        public Builder config(OutboxRelayConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /** Told of every batch's outcomes (e.g. for metrics); default none. */
        public Builder listener(OutboxRelayListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Whether each publish call is a send span; default {@link Tracing#auto()}. A span of kind PRODUCER named
         * {@code send <topic>} ({@code send} when the call's events have several topics), with
         * {@code messaging.system} (the publisher's {@code messagingSystem()}), the destination when one,
         * {@code messaging.message.id} of a single event or {@code messaging.batch.message_count} of several,
         * linked to each event's creation context (the writer's, stored with the event). Whatever this
         * setting, publishers send each event's stored context unchanged in the broker's headers.
         */
        public Builder tracing(Tracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /**
         * A relay, not yet started. Refused with an {@link IllegalArgumentException} when the
         * publisher's {@code maxCallDuration()} does not fit the configured publish timeout or lease.
         */
        public OutboxRelay build() {
            return new OutboxRelay(dataSource, publisher, config != null ? config : OutboxRelayConfig.builder().build(),
                    listener, tracing);
        }
    }
}

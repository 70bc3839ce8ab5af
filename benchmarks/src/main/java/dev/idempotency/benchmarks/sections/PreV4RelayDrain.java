package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.RelayBenchSettings;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Issue 13's "today's design", kept for comparison after the relay was rewritten: drain loops sending
 * the pre-V4 relay's exact statements (PENDING_KEYS, PENDING_EVENTS, MARK_PUBLISHED of outbox-relay's
 * RelaySql at commit e448791) to a {@link PreV4Schema} migrated up to V3 only, publishing to nothing.
 * It reproduces what that relay cost the database (a key scan, a batch read, one UPDATE marking every
 * event published), not the relay itself: each loop holds its partitions with a lease that does not
 * run out (no heartbeat or renewal, a few rows a second in the real relay), decodes no payload, and
 * marks the batch once as the old relay did after its waves. Not library code: nothing here is used
 * by the relay.
 */
final class PreV4RelayDrain {
    private static final Logger log = LoggerFactory.getLogger(PreV4RelayDrain.class);

    // ---- the pre-V4 relay's statements, verbatim from outbox-relay's RelaySql at e448791 -------------

    /**
     * Up to :limit distinct ordering hashes that have pending events, in hash order from :from on,
     * with their partitions. A loose index scan: one index probe per hash, however many events it
     * has, so a key with a long backlog costs no more to pass over than a key with one event.
     * Locks: none. Claiming is by partition lease, not by row lock, so no lock is held while a broker
     * call is outstanding.
     */
    static final String PENDING_KEYS = """
            WITH RECURSIVE pending_keys(ordering_hash, visited) AS (
                (SELECT ordering_hash, 1 FROM <schema>.outbox_events
                 WHERE status = 'pending' AND ordering_hash >= :from
                 ORDER BY ordering_hash
                 LIMIT 1)
              UNION ALL
                SELECT later.ordering_hash, pending_keys.visited + 1
                FROM pending_keys CROSS JOIN LATERAL (
                    SELECT e.ordering_hash FROM <schema>.outbox_events e
                    WHERE e.status = 'pending' AND e.ordering_hash > pending_keys.ordering_hash
                    ORDER BY e.ordering_hash
                    LIMIT 1) later
                WHERE pending_keys.visited < :limit
            )
            SELECT ordering_hash, (ordering_hash & 2147483647) % :partitions AS partition_no
            FROM pending_keys
            ORDER BY ordering_hash""";

    /**
     * The batch: for each given ordering hash its first :maxPerKey pending events in id order, less
     * every event at or behind a not-yet-due event of its key; first events of every key before
     * second ones, at most :batchSize, returned in id order. age_millis is now() - created_at.
     * message_id is the event's UUID, or for a row written before migration V3 its id in decimal.
     * Locks: none, as for {@link #PENDING_KEYS}.
     */
    static final String PENDING_EVENTS = """
            SELECT * FROM (
                SELECT * FROM (
                    SELECT e.id, coalesce(e.message_id::text, e.id::text) AS message_id,
                           e.tenant_id, e.topic, e.partition_key, e.payload::text AS payload,
                           e.headers::text AS headers, e.created_at, e.attempts,
                           (e.ordering_hash & 2147483647) % :partitions AS partition_no,
                           (extract(epoch FROM now() - e.created_at) * 1000)::bigint AS age_millis,
                           bool_and(e.next_attempt_at <= now())
                               OVER (PARTITION BY e.tenant_id, e.topic, e.partition_key ORDER BY e.id) AS due,
                           row_number() OVER (PARTITION BY e.ordering_hash ORDER BY e.id) AS place
                    FROM unnest(:hashes) AS k(ordering_hash)
                    CROSS JOIN LATERAL (
                        SELECT * FROM <schema>.outbox_events o
                        WHERE o.status = 'pending' AND o.ordering_hash = k.ordering_hash
                        ORDER BY o.id
                        LIMIT :maxPerKey) e
                ) fetched
                WHERE due
                ORDER BY place, id
                LIMIT :batchSize
            ) batch
            ORDER BY id""";

    /**
     * The fence of every write to claimed events: the claimed partitions this instance still holds
     * with the same epoch and an unexpired lease. Each fenced write starts with it, so a paused old
     * owner's write changes nothing.
     * Locks: none on the partition rows: a takeover needs the lease to have run out, which {@code
     * lease_expires_at > now()} excludes at this statement's snapshot.
     */
    static final String HELD_PARTITIONS = """
            WITH held AS (
                SELECT p.partition_no FROM <schema>.outbox_relay_partitions p
                JOIN unnest(:partitionNos, :epochs) AS claimed(partition_no, epoch)
                  ON claimed.partition_no = p.partition_no AND claimed.epoch = p.epoch
                WHERE p.owner_id = :instance AND p.lease_expires_at > now()
            )
            """;

    /**
     * Marks events published, but only those in partitions this instance still holds with the
     * claimed epoch and an unexpired lease; returns the partitions that passed that check.
     * Locks: the given event rows for this one autocommit statement; only the partition's holder writes
     * them, so it waits at most for an operator's requeue.
     */
    static final String MARK_PUBLISHED = HELD_PARTITIONS + """
            , marked AS (
                UPDATE <schema>.outbox_events e
                SET status = 'published', published_at = now()
                FROM held
                WHERE e.id = ANY(:ids) AND e.status = 'pending'
                  AND (e.ordering_hash & 2147483647) % :partitions = held.partition_no
            )
            SELECT partition_no FROM held""";

    /**
     * How many events wait to be published.
     * Locks: none.
     */
    static final String COUNT_PENDING = """
            SELECT count(*) FROM <schema>.outbox_events WHERE status = 'pending'""";

    // ---- the benchmark's own statements on the comparison schema ---------------------------------

    /** Empties the comparison schema's tables before a cell. */
    static final String TRUNCATE_TABLES = """
            TRUNCATE <schema>.payments, <schema>.idempotency_keys, <schema>.outbox_events,
                     <schema>.outbox_relay_partitions, <schema>.outbox_relay_instances""";

    /**
     * Partitions 0 .. :partitions - 1, partition p held by loop p % :instances ('prev4-<n>') at epoch 1
     * with a lease that does not run out during a run: what the old relay's ACQUIRE left, once.
     */
    static final String HOLD_PARTITIONS = """
            INSERT INTO <schema>.outbox_relay_partitions (partition_no, owner_id, epoch, lease_expires_at)
            SELECT p, 'prev4-' || (p % :instances), 1, now() + interval '1 day'
            FROM generate_series(0, :partitions - 1) AS p""";

    /** Most key-scan rounds one claim makes while the keys it finds have nothing due (the old relay's). */
    private static final int MAX_ROUNDS = 8;
    private static final long FIRST = Integer.MIN_VALUE;
    private static final long LAST = Integer.MAX_VALUE;
    /** The old relay's idle poll: 50 ms doubling to 1 s, cut short by a wake-up. */
    private static final long IDLE_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final long IDLE_MAX_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long BACKLOG_POLL_MILLIS = 20;

    private PreV4RelayDrain() {
    }

    /** Empties the comparison schema's outbox and writes {@code events} pending events, as {@link RelayDrain#fill} does. */
    static void fill(BenchmarkRun run, int events) {
        String schema = PreV4Schema.of(run.database()).schema();
        long started = System.nanoTime();
        try (HikariDataSource pool = run.database().pool("prev4-fill", 1)) {
            Jdbi.create(pool).useHandle(h -> {
                h.execute(BenchmarkSql.render(TRUNCATE_TABLES, schema));
                h.createUpdate(BenchmarkSql.render(RelayBenchSql.FILL_OUTBOX, schema))
                        .bind("events", events).bind("keys", run.settings().relay().partitionKeys()).execute();
                h.execute(BenchmarkSql.render(RelayBenchSql.VACUUM_OUTBOX, schema));
            });
        }
        log.info("filled the pre-V4 outbox with {} events in {} s", events, (System.nanoTime() - started) / 1e9);
    }

    /** Seconds for {@code instances} loops to drain the {@code events} written by {@link #fill}. */
    static double drain(BenchmarkRun run, int instances, long events) throws Exception {
        AtomicLong published = new AtomicLong();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + TimeUnit.MILLISECONDS.toNanos(events);
        try (Running loops = start(run, instances, published)) {
            long started = System.nanoTime();
            long lastLog = started;
            while (published.get() < events || loops.pending() > 0) {
                loops.checkFailure();
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("pre-V4 loops did not drain " + events + " events in time: "
                            + published.get() + " published, " + loops.pending() + " pending");
                }
                if (System.nanoTime() - lastLog > TimeUnit.SECONDS.toNanos(10)) {
                    lastLog = System.nanoTime();
                    log.info("{} pre-V4 loop(s): {} of {} published", instances, published.get(), events);
                }
                Thread.sleep(BACKLOG_POLL_MILLIS);
            }
            return (System.nanoTime() - started) / 1e9;
        }
    }

    /**
     * Starts {@code instances} drain loops on the comparison schema, each on its own pool of
     * {@link RelayBenchSettings#RELAY_POOL_SIZE} connections, counting what they publish into {@code published}.
     */
    static Running start(BenchmarkRun run, int instances, AtomicLong published) {
        String schema = PreV4Schema.of(run.database()).schema();
        RelayBenchSettings relay = run.settings().relay();
        Running running = new Running(run.database().pool("prev4-backlog", 1), schema);
        try {
            Jdbi.create(running.monitor).useHandle(h -> h.createUpdate(BenchmarkSql.render(HOLD_PARTITIONS, schema))
                    .bind("instances", instances).bind("partitions", relay.partitions()).execute());
            for (int i = 0; i < instances; i++) {
                Set<Integer> owned = new TreeSet<>();
                for (int p = i; p < relay.partitions(); p += instances) {
                    owned.add(p);
                }
                HikariDataSource pool = run.database().pool("prev4-relay-" + i, RelayBenchSettings.RELAY_POOL_SIZE);
                running.pools.add(pool);
                Loop loop = new Loop(Jdbi.create(pool), schema, "prev4-" + i, owned, relay, published, running.failure);
                running.loops.add(loop);
                Thread thread = new Thread(loop, "prev4-relay-" + i);
                running.threads.add(thread);
                thread.start();
            }
            return running;
        } catch (RuntimeException e) {
            running.close();
            throw e;
        }
    }

    /** Loops under way; {@link #close()} stops them and closes their pools. */
    static final class Running implements AutoCloseable {
        private final HikariDataSource monitor;
        private final String countPending;
        private final List<HikariDataSource> pools = new ArrayList<>();
        private final List<Loop> loops = new ArrayList<>();
        private final List<Thread> threads = new ArrayList<>();
        private final AtomicReference<RuntimeException> failure = new AtomicReference<>();

        private Running(HikariDataSource monitor, String schema) {
            this.monitor = monitor;
            this.countPending = BenchmarkSql.render(COUNT_PENDING, schema);
        }

        /** Ends every loop's idle wait, as the old relay's afterOutboxCommit(relay::wakeUp) did. */
        void wakeUp() {
            loops.forEach(Loop::wakeUp);
        }

        /** Pending events by the old relay's own count. */
        long pending() {
            return Jdbi.create(monitor).withHandle(h -> h.createQuery(countPending).mapTo(Long.class).one());
        }

        /** Throws the first failure of a loop, if any stopped on one. */
        void checkFailure() {
            RuntimeException e = failure.get();
            if (e != null) {
                throw new IllegalStateException("a pre-V4 drain loop failed: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            loops.forEach(Loop::stop);
            for (Thread thread : threads) {
                try {
                    thread.join(TimeUnit.SECONDS.toMillis(30));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            pools.forEach(HikariDataSource::close);
            monitor.close();
        }
    }

    /** One old relay's worker: key scan, batch read, publish to nothing, one fenced mark; idle poll when empty. */
    private static final class Loop implements Runnable {
        private final Jdbi jdbi;
        private final String instance;
        private final Set<Integer> owned;
        private final int partitions;
        private final int batchSize;
        private final int maxEventsPerKey;
        private final int budget;
        private final String pendingKeys;
        private final String pendingEvents;
        private final String markPublished;
        private final AtomicLong published;
        private final AtomicReference<RuntimeException> failure;
        private final Semaphore signal = new Semaphore(0);
        private volatile boolean stopping;
        private long from = FIRST;
        private boolean lapCompleted;
        private long idleNanos = IDLE_MIN_NANOS;

        Loop(Jdbi jdbi, String schema, String instance, Set<Integer> owned, RelayBenchSettings relay, AtomicLong published,
             AtomicReference<RuntimeException> failure) {
            this.jdbi = jdbi;
            this.instance = instance;
            this.owned = owned;
            this.partitions = relay.partitions();
            this.batchSize = relay.batchSize();
            this.maxEventsPerKey = relay.eventsPerKey();
            // As OutboxEventStore.claim: enough hashes to find a batch's worth when holding only some partitions.
            this.budget = batchSize * Math.min(16, (partitions + owned.size() - 1) / owned.size());
            this.pendingKeys = BenchmarkSql.render(PENDING_KEYS, schema);
            this.pendingEvents = BenchmarkSql.render(PENDING_EVENTS, schema);
            this.markPublished = BenchmarkSql.render(MARK_PUBLISHED, schema);
            this.published = published;
            this.failure = failure;
        }

        void wakeUp() {
            if (signal.availablePermits() == 0) {
                signal.release();
            }
        }

        void stop() {
            stopping = true;
            signal.release();
        }

        @Override
        public void run() {
            try {
                while (!stopping) {
                    if (batch() == 0) {
                        boolean woken = signal.tryAcquire(idleNanos, TimeUnit.NANOSECONDS);
                        signal.drainPermits();
                        idleNanos = woken ? IDLE_MIN_NANOS : Math.min(IDLE_MAX_NANOS, idleNanos * 2);
                    } else {
                        idleNanos = IDLE_MIN_NANOS;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                if (!stopping) {
                    log.error("pre-V4 drain loop {} failed", instance, e);
                    failure.compareAndSet(null, e);
                }
            }
        }

        /** One batch as OutboxDispatcher.dispatchBatch did it with a publisher that accepts everything. */
        private int batch() {
            List<long[]> rows = claim();
            if (rows.isEmpty()) {
                return 0;
            }
            Map<Integer, Long> claimed = new LinkedHashMap<>();
            List<Long> ids = new ArrayList<>(rows.size());
            for (long[] row : rows) {
                ids.add(row[0]);
                claimed.put((int) row[1], 1L);
            }
            List<Integer> held = jdbi.withHandle(h -> h.createQuery(markPublished)
                    .bind("instance", instance)
                    .bind("partitions", partitions)
                    .bindArray("partitionNos", Integer.class, List.copyOf(claimed.keySet()))
                    .bindArray("epochs", Long.class, List.copyOf(claimed.values()))
                    .bindArray("ids", Long.class, ids)
                    .mapTo(Integer.class)
                    .list());
            if (held.size() != claimed.size()) {
                throw new IllegalStateException("loop " + instance + " lost the fence of partitions it holds for good: "
                        + claimed.keySet() + " claimed, " + held + " held");
            }
            published.addAndGet(rows.size());
            return rows.size();
        }

        /** OutboxEventStore.claim: keys from the scan, their first events; a few rounds while nothing is due. */
        private List<long[]> claim() {
            for (int round = 0; round < MAX_ROUNDS; round++) {
                List<Integer> hashes = nextKeys();
                List<long[]> rows = hashes.isEmpty() ? List.of() : jdbi.withHandle(h -> h.createQuery(pendingEvents)
                        .bind("partitions", partitions)
                        .bind("maxPerKey", maxEventsPerKey)
                        .bind("batchSize", batchSize)
                        .bindArray("hashes", Integer.class, hashes)
                        // Every column is read off the wire, as the old relay did before decoding.
                        .map((rs, ctx) -> {
                            rs.getString("message_id");
                            rs.getString("tenant_id");
                            rs.getString("topic");
                            rs.getString("partition_key");
                            rs.getString("payload");
                            rs.getString("headers");
                            rs.getString("created_at");
                            return new long[] {rs.getLong("id"), rs.getInt("partition_no")};
                        })
                        .list());
                if (!rows.isEmpty()) {
                    return rows;
                }
                if (lapCompleted) {
                    break;
                }
            }
            return List.of();
        }

        /** PendingKeyScan.next: hashes of owned partitions in a circle from where the last call stopped. */
        private List<Integer> nextKeys() {
            List<Integer> chosen = new ArrayList<>(batchSize);
            long began = from;
            lapCompleted = false;
            boolean wrapped = false;
            while (true) {
                long scanFrom = from;
                List<int[]> visited = jdbi.withHandle(h -> h.createQuery(pendingKeys)
                        .bind("from", (int) scanFrom)
                        .bind("limit", budget)
                        .bind("partitions", partitions)
                        .map((rs, ctx) -> new int[] {rs.getInt(1), rs.getInt(2)})
                        .list());
                for (int[] key : visited) {
                    if (wrapped && key[0] >= began) {
                        from = began;
                        lapCompleted = true;
                        return chosen;
                    }
                    if (owned.contains(key[1])) {
                        chosen.add(key[0]);
                        if (chosen.size() == batchSize) {
                            from = after(key[0]);
                            return chosen;
                        }
                    }
                }
                if (visited.size() == budget) {
                    from = after(visited.get(visited.size() - 1)[0]);
                    return chosen;
                }
                from = FIRST;
                if (wrapped || began == FIRST) {
                    lapCompleted = true;
                    return chosen;
                }
                wrapped = true;
            }
        }

        private static long after(int hash) {
            return hash == LAST ? FIRST : hash + 1L;
        }
    }
}

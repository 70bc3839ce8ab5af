package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The virtual partitions this relay instance holds, kept in step with {@code outbox_relay_partitions}.
 * Every change of ownership in the database is one atomic statement; this class adds the local view:
 * the epoch each lease was granted with and a deadline on the local monotonic clock after which the
 * relay must not start publishing the partition (the lease could lapse during the publish call).
 *
 * <p>The lease thread calls {@link #maintain()}; the worker thread reads {@link #publishable()},
 * checks {@link #canPublish} before each publish call, drops partitions whose fenced writes failed
 * ({@link #drop}) and performs the releases that rebalancing asked for ({@link #releaseRequestedPartitions()}),
 * because a partition may only be given away between batches.
 */
final class PartitionLeases {
    private static final Logger log = LoggerFactory.getLogger(PartitionLeases.class);

    /** A lease as this instance knows it: granted with {@code epoch}, usable until {@code deadlineNanos}. */
    record Lease(int partition, long epoch, long deadlineNanos) {
    }

    private final Jdbi jdbi;
    private final String instanceId;
    private final int partitions;
    private final long leaseMillis;
    private final long deadlineOffsetNanos;
    private final long publishWindowNanos;
    private final Map<Integer, Lease> held = new ConcurrentHashMap<>();
    private final Set<Integer> releasing = ConcurrentHashMap.newKeySet();
    private final String lockPartitions;
    private final String createPartitions;
    private final String countPartitions;
    private final String heartbeat;
    private final String deregister;
    private final String acquire;
    private final String renew;
    private final String release;
    /**
     * This relay's updates of its partition rows, one at a time: the lease thread's renewals and the
     * worker's position writes update the same rows from two connections, and in two orders they
     * deadlocked (PostgreSQL then aborts one after deadlock_timeout).
     */
    private final ReentrantLock partitionRowUpdates = new ReentrantLock();
    private volatile boolean acquiring = true;

    PartitionLeases(Jdbi jdbi, OutboxRelayConfig config, RelaySql sql) {
        this.jdbi = jdbi;
        this.instanceId = config.instanceId();
        this.partitions = config.partitions();
        this.leaseMillis = config.leaseDuration().toMillis();
        this.deadlineOffsetNanos = config.leaseDuration().minus(config.leaseSafetyMargin()).toNanos();
        this.publishWindowNanos = config.publishTimeout().toNanos();
        this.lockPartitions = sql.lockPartitions;
        this.createPartitions = sql.createPartitions;
        this.countPartitions = sql.countPartitions;
        this.heartbeat = sql.heartbeat;
        this.deregister = sql.deregister;
        this.acquire = sql.acquire;
        this.renew = sql.renew;
        this.release = sql.release;
    }

    /**
     * Creates the partition rows if this is the first relay on the database, and refuses to run
     * with a partition count other than the one the database already has.
     */
    void prepare() {
        long existing = jdbi.inTransaction(h -> {
            h.createUpdate(lockPartitions).execute();
            h.createUpdate(createPartitions).bind("partitions", partitions).execute();
            return h.createQuery(countPartitions).mapTo(Long.class).one();
        });
        if (existing != partitions) {
            throw new IllegalStateException("the database has " + existing + " relay partitions but this relay is"
                    + " configured with partitions = " + partitions + "; every relay on one database must use the same"
                    + " count (to change it, stop all relays and delete the rows of outbox_relay_partitions)");
        }
    }

    /**
     * One lease cycle: renew what is held, heartbeat, then move toward a fair share
     * (partitions / live instances, rounded up) by asking the worker to release the excess or by
     * taking free and expired partitions. Returns true when it acquired a partition.
     */
    boolean maintain() {
        renew();
        int live = jdbi.withHandle(h -> h.createQuery(heartbeat)
                .bind("instance", instanceId)
                .bind("leaseMillis", leaseMillis)
                .mapTo(Integer.class)
                .one());
        if (!acquiring) {
            return false;
        }
        int share = (partitions + live - 1) / live;
        List<Integer> active = held.keySet().stream().filter(p -> !releasing.contains(p)).sorted().toList();
        if (active.size() > share) {
            List<Integer> excess = active.subList(share, active.size());
            log.info("relay {} releases partitions {} to reach its share of {} with {} live instances",
                    instanceId, excess, share, live);
            releasing.addAll(excess);
            return false;
        }
        if (active.size() < share && releasing.isEmpty()) {
            return acquire(share - active.size()) > 0;
        }
        return false;
    }

    /** Takes up to {@code wanted} free or expired partitions; returns how many it got. */
    int acquire(int wanted) {
        long start = System.nanoTime();
        List<Lease> granted = jdbi.withHandle(h -> h.createQuery(acquire)
                .bind("instance", instanceId)
                .bind("wanted", wanted)
                .bind("leaseMillis", leaseMillis)
                .map((rs, ctx) -> new Lease(rs.getInt(1), rs.getLong(2), start + deadlineOffsetNanos))
                .list());
        for (Lease lease : granted) {
            held.put(lease.partition(), lease);
        }
        if (!granted.isEmpty()) {
            log.info("relay {} acquired partitions {}", instanceId,
                    granted.stream().map(l -> l.partition() + "@" + l.epoch()).toList());
        }
        return granted.size();
    }

    /** Extends every held lease still valid in the database; forgets those that are not. */
    void renew() {
        List<Lease> current = List.copyOf(held.values());
        if (current.isEmpty()) {
            return;
        }
        long start = System.nanoTime();
        Set<Map.Entry<Integer, Long>> renewed = updatingPartitionRows(() -> jdbi.withHandle(h -> h.createQuery(renew)
                .bind("instance", instanceId)
                .bind("leaseMillis", leaseMillis)
                .bindByType("partitionNos", partitionsOf(current), BoundArrays.INTEGERS)
                .bindByType("epochs", epochsOf(current), BoundArrays.BIGINTS)
                .map((rs, ctx) -> Map.entry(rs.getInt(1), rs.getLong(2)))
                .set()));
        List<String> lost = new ArrayList<>();
        for (Lease lease : current) {
            if (renewed.contains(Map.entry(lease.partition(), lease.epoch()))) {
                held.computeIfPresent(lease.partition(), (p, old) -> old.epoch() == lease.epoch()
                        ? new Lease(p, old.epoch(), start + deadlineOffsetNanos) : old);
            } else if (held.remove(lease.partition(), lease) && !releasing.remove(lease.partition())) {
                lost.add(lease.partition() + "@" + lease.epoch());
            }
        }
        if (!lost.isEmpty()) {
            log.warn("relay {} lost partitions {}: their leases ran out or were taken over", instanceId, lost);
        }
    }

    /** Partitions safe to claim now, with the epoch to fence their writes; not those being released. */
    Map<Integer, Long> publishable() {
        long now = System.nanoTime();
        Map<Integer, Long> result = new HashMap<>();
        for (Lease lease : held.values()) {
            if (!releasing.contains(lease.partition()) && lease.deadlineNanos() - now >= publishWindowNanos) {
                result.put(lease.partition(), lease.epoch());
            }
        }
        return result;
    }

    /**
     * Whether a publish call for {@code partition} may start: this instance still holds it with
     * {@code epoch}, and the lease outlasts a whole publish call by the local monotonic clock.
     */
    boolean canPublish(int partition, long epoch) {
        Lease lease = held.get(partition);
        return lease != null && lease.epoch() == epoch && lease.deadlineNanos() - System.nanoTime() >= publishWindowNanos;
    }

    /** Forgets a partition whose fenced write found the lease gone (taken over or expired). */
    void drop(int partition, long epoch) {
        Lease lease = held.get(partition);
        if (lease != null && lease.epoch() == epoch && held.remove(partition, lease)) {
            releasing.remove(partition);
            log.warn("relay {} dropped partition {} (epoch {}): a fenced write found its lease gone",
                    instanceId, partition, epoch);
        }
    }

    /** Whether rebalancing asked the worker to release partitions. */
    boolean releaseRequested() {
        return !releasing.isEmpty();
    }

    /** Releases the partitions rebalancing asked for; the worker calls it between batches. */
    void releaseRequestedPartitions() {
        List<Lease> leases = releasing.stream().map(held::get).filter(l -> l != null).toList();
        releaseInDatabase(leases);
        leases.forEach(l -> {
            held.remove(l.partition(), l);
            releasing.remove(l.partition());
        });
    }

    /** Releases every held partition in the database and forgets them (graceful stop). */
    void releaseAll() {
        List<Lease> leases = List.copyOf(held.values());
        releaseInDatabase(leases);
        leases.forEach(l -> held.remove(l.partition(), l));
        releasing.clear();
        if (!leases.isEmpty()) {
            log.info("relay {} released partitions {}", instanceId,
                    leases.stream().map(Lease::partition).sorted().toList());
        }
    }

    private void releaseInDatabase(List<Lease> leases) {
        if (leases.isEmpty()) {
            return;
        }
        updatingPartitionRows(() -> jdbi.withHandle(h -> h.createQuery(release)
                .bind("instance", instanceId)
                .bindByType("partitionNos", partitionsOf(leases), BoundArrays.INTEGERS)
                .bindByType("epochs", epochsOf(leases), BoundArrays.BIGINTS)
                .mapTo(Integer.class)
                .list()));
    }

    /** Runs an update of this relay's partition rows (renewal, release, position write) after any other one ends. */
    <T> T updatingPartitionRows(Supplier<T> update) {
        partitionRowUpdates.lock();
        try {
            return update.get();
        } finally {
            partitionRowUpdates.unlock();
        }
    }

    /** Stops taking partitions (a stop is under way); renewals go on. */
    void stopAcquiring() {
        acquiring = false;
    }

    /** Deletes this instance's heartbeat so the others count it gone at once. */
    void deregister() {
        jdbi.useHandle(h -> h.createUpdate(deregister).bind("instance", instanceId).execute());
    }

    /** Forgets every lease without telling the database (a crash); they lapse after the lease duration. */
    void forgetAll() {
        acquiring = false;
        held.clear();
        releasing.clear();
    }

    /** This relay instance's id. */
    String instanceId() {
        return instanceId;
    }

    /** The partitions held now, in order. */
    Set<Integer> held() {
        return new TreeSet<>(held.keySet());
    }

    private static List<Integer> partitionsOf(List<Lease> leases) {
        return leases.stream().sorted(Comparator.comparingInt(Lease::partition)).map(Lease::partition).toList();
    }

    private static List<Long> epochsOf(List<Lease> leases) {
        return leases.stream().sorted(Comparator.comparingInt(Lease::partition)).map(Lease::epoch).toList();
    }

}

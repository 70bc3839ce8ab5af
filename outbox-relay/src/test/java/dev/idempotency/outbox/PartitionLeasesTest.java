package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease statements, driven by hand (no relay threads) so each step is deterministic. */
@Timeout(60)
class PartitionLeasesTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();

    private PartitionLeases leases(String instance) {
        OutboxRelayConfig config = outbox.config(instance).leaseDuration(Duration.ofSeconds(30))
                .renewalInterval(Duration.ofSeconds(5)).publishTimeout(Duration.ofSeconds(10)).build();
        PartitionLeases leases = new PartitionLeases(OutboxRelay.jdbi(outbox.dataSource(), config), config, new RelaySql(config.schema()));
        leases.prepare();
        return leases;
    }

    private void expireAllLeases() {
        outbox.execute("UPDATE outbox_relay_partitions SET lease_expires_at = now() - interval '1 second'"
                + " WHERE owner_id IS NOT NULL");
    }

    @Test
    void liveInstancesConvergeOnFairSharesAndNeverHoldAPartitionTwice() {
        List<PartitionLeases> instances = List.of(leases("a"), leases("b"), leases("c"));
        for (int round = 0; round < 4; round++) {
            for (PartitionLeases instance : instances) {
                instance.maintain();
                if (instance.releaseRequested()) {
                    instance.releaseRequestedPartitions();
                }
            }
        }

        Set<Integer> union = new HashSet<>();
        for (PartitionLeases instance : instances) {
            assertTrue(instance.held().size() <= 3, instance.instanceId() + " holds " + instance.held());
            instance.held().forEach(p -> assertTrue(union.add(p), "partition " + p + " held twice"));
        }
        assertEquals(Set.of(0, 1, 2, 3, 4, 5, 6, 7), union);
        Map<Integer, String> owners = outbox.owners();
        for (PartitionLeases instance : instances) {
            instance.held().forEach(p -> assertEquals(instance.instanceId(), owners.get(p)));
        }
    }

    @Test
    void concurrentAcquisitionsGrantEachPartitionToExactlyOneInstance() throws Exception {
        List<PartitionLeases> instances = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            instances.add(leases("i" + i));
        }
        CyclicBarrier start = new CyclicBarrier(instances.size());
        ExecutorService threads = Executors.newFixedThreadPool(instances.size());
        try {
            List<Future<Integer>> granted = new ArrayList<>();
            for (PartitionLeases instance : instances) {
                granted.add(threads.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    return instance.acquire(8);
                }));
            }
            int total = 0;
            for (Future<Integer> g : granted) {
                total += g.get(30, TimeUnit.SECONDS);
            }
            assertEquals(8, total);
        } finally {
            threads.shutdownNow();
        }
        Set<Integer> union = new HashSet<>();
        instances.forEach(i -> i.held().forEach(p -> assertTrue(union.add(p), "partition " + p + " granted twice")));
        assertEquals(8, union.size());
        assertEquals(8, outbox.number("SELECT count(*) FROM outbox_relay_partitions WHERE epoch = 1"));
    }

    @Test
    void aHeldLeaseIsTakenOverOnlyAfterItRunsOutAndTheOldHolderThenCannotRenewIt() {
        PartitionLeases a = leases("a");
        PartitionLeases b = leases("b");
        assertEquals(8, a.acquire(8));

        assertEquals(0, b.acquire(8), "a valid lease is not taken");
        expireAllLeases();
        assertEquals(8, b.acquire(8));
        a.renew();

        assertEquals(Set.of(), a.held());
        assertEquals(Set.of(0, 1, 2, 3, 4, 5, 6, 7), b.held());
        assertEquals(8, outbox.number("SELECT count(*) FROM outbox_relay_partitions WHERE owner_id = 'b' AND epoch = 2"));
        b.renew();
        assertEquals(8, b.held().size(), "the new holder renews");
    }

    @Test
    void releasedPartitionsAreFreeAtOnceAndAStoppedInstanceStopsCounting() {
        PartitionLeases a = leases("a");
        PartitionLeases b = leases("b");
        a.maintain();
        b.maintain();
        assertEquals(8, a.held().size());
        assertEquals(0, b.held().size(), "all partitions are validly held by a");

        a.releaseAll();
        a.deregister();
        b.maintain();

        assertEquals(8, b.held().size(), "b takes a's share without waiting for a lease to run out");
        assertEquals(Set.of("b"), Set.copyOf(outbox.owners().values()));
    }

    @Test
    void aRelayConfiguredWithAnotherPartitionCountRefusesToStart() {
        leases("a");
        OutboxRelayConfig other = outbox.config("b").partitions(16).build();
        Jdbi jdbi = OutboxRelay.jdbi(outbox.dataSource(), other);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new PartitionLeases(jdbi, other, new RelaySql(other.schema())).prepare());
        assertTrue(e.getMessage().contains("the database has 8 relay partitions but this relay is configured with partitions = 16"),
                e.getMessage());
    }
}

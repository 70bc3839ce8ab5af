package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A paused ("zombie") relay, driven by hand: its lease thread does not run, as in a process that was
 * stopped by a long GC pause or a frozen VM, while another instance takes its partitions over.
 */
@Timeout(60)
class OutboxRelayFencingTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();
    private final PublicationLog log = new PublicationLog();
    private final RecordingPublisher zombiePublisher = new RecordingPublisher("zombie", log);
    private TimeLimitedPublisher timeLimited;

    @AfterEach
    void tearDown() {
        zombiePublisher.openGate();
        if (timeLimited != null) {
            timeLimited.shutdown();
        }
    }

    /** One partition, 30 s leases: nothing here lapses by itself; the test expires leases in the database. */
    private OutboxRelayConfig config(String instance) {
        return outbox.config(instance).partitions(1).leaseDuration(Duration.ofSeconds(30))
                .renewalInterval(Duration.ofSeconds(5)).publishTimeout(Duration.ofSeconds(10)).build();
    }

    private PartitionLeases leases(OutboxRelayConfig config) {
        PartitionLeases leases = new PartitionLeases(OutboxRelay.jdbi(outbox.dataSource(), config), config, new RelaySql(config.schema()));
        leases.prepare();
        return leases;
    }

    private OutboxDispatcher dispatcher(OutboxRelayConfig config, PartitionLeases leases) {
        Jdbi jdbi = OutboxRelay.jdbi(outbox.dataSource(), config);
        timeLimited = new TimeLimitedPublisher(zombiePublisher, config.publishTimeout(), "zombie-publish");
        RelaySql sql = new RelaySql(config.schema());
        return new OutboxDispatcher(new OutboxPositions(outbox.dataSource(), jdbi, config, sql), new RetryQueue(jdbi, config, sql), leases,
                timeLimited, config, OutboxRelayListener.NONE,
                new PublisherOutage(config.instanceId(), config.backoffBase(), config.backoffMax()),
                new RelayStats(jdbi, sql, config.instanceId()));
    }

    /** What a paused holder cannot see: its lease ran out by the database clock and another instance took them. */
    private PartitionLeases takeOverAfterExpiry() {
        outbox.execute("UPDATE outbox_relay_partitions SET lease_expires_at = now() - interval '1 second'"
                + " WHERE owner_id = 'zombie'");
        PartitionLeases successor = leases(config("successor"));
        assertEquals(1, successor.acquire(1));
        return successor;
    }

    @Test
    void aZombieWhoseLeaseWasTakenOverCannotMarkItsRowsAndDropsThePartitions() throws Exception {
        OutboxRelayConfig config = config("zombie");
        PartitionLeases zombie = leases(config);
        assertEquals(1, zombie.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, zombie);
        long willSucceed = outbox.insert("t", "orders", "k1", "{}");
        long willFail = outbox.insert("t", "orders", "k2", "{}");
        zombiePublisher.failing(e -> e.id() == willFail).closeGate();

        CompletableFuture<Integer> batch = CompletableFuture.supplyAsync(() -> {
            try {
                return dispatcher.dispatchBatch();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertTrue(zombiePublisher.awaitBlocked(20), "the zombie's publish call is under way");
        PartitionLeases successor = takeOverAfterExpiry();
        zombiePublisher.openGate();

        assertEquals(2, batch.get(30, TimeUnit.SECONDS));
        assertNotNull(zombiePublisher.received(willSucceed), "the zombie did send (the window brokers cannot fence)");
        assertEquals("pending", outbox.status(willSucceed), "its 'published' mark was fenced off");
        assertEquals(0, outbox.attempts(willFail), "its failure record was fenced off");
        assertNull(outbox.lastError(willFail));
        assertEquals("1:1:", outbox.string("SELECT consumed_snapshot::text FROM outbox_relay_partitions"),
                "the zombie's position write was refused: the successor starts where the zombie started");
        assertNull(outbox.string("SELECT batch_snapshot::text FROM outbox_relay_partitions"));
        assertEquals(0, outbox.number("SELECT count(*) FROM outbox_retries"), "nor did its failure reach outbox_retries");
        assertEquals(Set.of(), zombie.held(), "the zombie noticed and dropped the partition");
        assertEquals(Map.of(0, "successor"), outbox.owners());
        assertEquals(Set.of(0), successor.held());

        int calls = zombiePublisher.calls();
        assertEquals(0, dispatcher.dispatchBatch(), "with its partition dropped it claims nothing");
        assertEquals(calls, zombiePublisher.calls());
    }

    @Test
    void aRelayThatLosesItsLeaseDuringABatchSendsNoFurtherWavesOfIt() throws Exception {
        OutboxRelayConfig config = config("zombie");
        PartitionLeases zombie = leases(config);
        assertEquals(1, zombie.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, zombie);
        long first = outbox.insert("t", "orders", "k", "{}");
        long second = outbox.insert("t", "orders", "k", "{}");
        zombiePublisher.closeGate();

        CompletableFuture<Integer> batch = CompletableFuture.supplyAsync(() -> {
            try {
                return dispatcher.dispatchBatch();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertTrue(zombiePublisher.awaitBlocked(20));
        takeOverAfterExpiry();
        zombie.renew(); // the lease thread's next cycle finds the leases gone
        zombiePublisher.openGate();

        assertEquals(2, batch.get(30, TimeUnit.SECONDS));
        assertNotNull(zombiePublisher.received(first));
        assertNull(zombiePublisher.received(second), "the second wave was not sent");
        assertEquals("pending", outbox.status(first));
        assertEquals("pending", outbox.status(second));
    }

    @Test
    void aRelayPausedPastItsLocalLeaseDeadlinePublishesNothing() throws Exception {
        // 3 s lease, 1 s publish timeout, 0.3 s margin: publish calls may start up to 1.7 s after the renewal.
        OutboxRelayConfig config = outbox.config("zombie").partitions(1).build();
        PartitionLeases zombie = leases(config);
        assertEquals(1, zombie.acquire(1));
        OutboxDispatcher dispatcher = dispatcher(config, zombie);
        long id = outbox.insert("t", "orders", "k", "{}");

        Thread.sleep(2000); // the pause: no renewal happens

        assertEquals(0, dispatcher.dispatchBatch());
        assertEquals(0, zombiePublisher.calls());
        assertEquals("pending", outbox.status(id));
    }
}

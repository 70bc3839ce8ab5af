package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults 5 and 6 under load, with the accounting (the single-call versions are idempotency-jdbc's
 * DatabaseFailureTest): a third of the callbacks update two hot rows in opposite orders, so they deadlock
 * each other, and eight callers share a pool of three connections with a 300 ms checkout timeout,
 * so the pool runs dry. Deadlock victims and callers without a connection get a retryable
 * TransientFailureException, never a hang or a raw SQL error, and their retries settle every key once.
 */
@Timeout(180)
class DeadlockAndPoolTest {

    @Test
    void deadlocksAndAnExhaustedPoolReachCallersAsRetryableErrorsAndRetriesSettleEveryKeyOnce() throws Exception {
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_deadlock")) {
            Ledger ledger = new Ledger();
            PublishedEvents published = new PublishedEvents();
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 2), new RecordingSink(published))
                    .config(Relays.fastConfig(db.schema())).build();
            PostgresIdempotentExecutor executor = db.executor(db.pool("callers", 3, 300), relay::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), "transfers")
                    .deadlockShare(0.3).threads(8);
            relay.start();
            try {
                workload.run("transfer", 100);
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(60));
            } finally {
                relay.stop();
            }
            Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
            accounting.print("faults 5 and 6: deadlocks and an exhausted pool");
            accounting.assertExact("faults 5 and 6: deadlocks and an exhausted pool");
            assertTrue(ledger.retriedBy().getOrDefault("TransientFailure 40P01", 0) > 0,
                    "no deadlock happened, so the test proved nothing: " + ledger.retriedBy());
        }
    }
}

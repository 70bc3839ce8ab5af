package dev.idempotency.faults;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fault 1: callbacks' database connections are killed ({@code pg_terminate_backend}) while
 * duplicate callers run. Killed calls reach callers as TransientFailureException (outcome unknown
 * when the kill hit the commit); their retries with the same key replay what committed and run
 * what did not, so each effect exists once and every committed event is published in order.
 */
@Timeout(180)
class ConnectionKillTest {

    @Test
    void killedCallbackConnectionsLeaveEveryEffectOnceAndEveryEventPublishedInOrder() throws Exception {
        try (FaultDatabase db = FaultDatabase.onSharedServer("fault_kill")) {
            Ledger ledger = new Ledger();
            PublishedEvents published = new PublishedEvents();
            OutboxRelay relay = OutboxRelay.builder(db.pool("relay", 3), new RecordingSink(published))
                    .config(Relays.fastConfig(db.schema())).build();
            PostgresIdempotentExecutor executor = db.executor("callers", 6, relay::wakeUp);
            Workload workload = new Workload(executor, ledger, "tenant-" + UUID.randomUUID(), "payments");
            relay.start();
            try (ConnectionKiller killer = new ConnectionKiller(db, "callers", ledger, 20, 80).start()) {
                workload.run("kill", 300);
            } finally {
                Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(60));
                relay.stop();
            }
            Accounting accounting = Accounting.of(db.jdbi(), workload.tenant(), ledger, published);
            accounting.print("fault 1: callback connections killed");
            accounting.assertExact("fault 1: callback connections killed");
            if (ledger.faults("connection killed") == 0) {
                throw new AssertionError("no connection was killed: the test proved nothing");
            }
        }
    }
}

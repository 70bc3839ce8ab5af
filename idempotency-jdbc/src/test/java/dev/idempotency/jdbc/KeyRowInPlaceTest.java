package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.insertPayment;
import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.LeaseRequest;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a call costs the keys table (V5): a completion or stored failure of a key without a lease
 * rewrites its row in place (a HOT update, counted by PostgreSQL), so it adds no index entries and
 * leaves no dead ones; settling a lease clears it, so the sweeper's index of leases does not grow
 * with every key ever leased.
 */
@Timeout(60)
class KeyRowInPlaceTest {
    /** One connection, so the statistics this test flushes are those of the backend that ran the calls. */
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(1);

    @Test
    void completionsAndStoredFailuresUpdateTheKeyRowInPlace() {
        PostgresIdempotentExecutor executor = db.executor();
        Map<String, Long> before = keyTableUpdates();

        for (int i = 0; i < 5; i++) {
            String key = newKey();
            executor.run(key, "t1", tx -> {
                insertPayment(tx, 100);
                tx.outbox().publish("payments", key, Map.of("amount", 100));
                return 1L;
            });
        }
        for (int i = 0; i < 5; i++) {
            // Stored, then thrown to the caller.
            assertThrows(BusinessFailure.class, () -> executor.run(newKey(), "t1", tx -> {
                insertPayment(tx, 100);
                throw new BusinessFailure("card_declined", "declined");
            }));
        }

        Map<String, Long> after = keyTableUpdates();
        assertEquals(10, after.get("updates") - before.get("updates"));
        assertEquals(10, after.get("hot_updates") - before.get("hot_updates"), "every update of a key row was HOT: " + after);
    }

    @Test
    void aCompletedLeaseNoLongerCountsAsALease() {
        String key = newKey();
        PostgresIdempotentExecutor executor = db.executor(c -> c.allowResultTypes(String.class));

        executor.runWithLease(LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30)).resultType(String.class).build(),
                lease -> "ch_" + lease.fencingToken(), (tx, chargeId) -> chargeId);

        Map<String, Object> row = db.keyRow(key, "t1");
        assertEquals("completed", row.get("status"));
        assertNull(row.get("lease_token"));
        assertNull(row.get("lease_expires_at"));
    }

    /**
     * The keys table's update counters, after the pool's one backend has reported its own: PostgreSQL
     * sends a backend's statistics when it goes idle, at most once a second unless asked to.
     */
    private static Map<String, Long> keyTableUpdates() {
        db.jdbi.useHandle(h -> h.execute("SELECT pg_stat_force_next_flush()"));
        return db.jdbi.withHandle(h -> h.createQuery("SELECT n_tup_upd AS updates, n_tup_hot_upd AS hot_updates "
                        + "FROM pg_stat_user_tables WHERE relid = 'idempotency_keys'::regclass")
                .mapToMap(Long.class).one());
    }
}

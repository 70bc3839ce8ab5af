package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** How the retry path chooses keys: every key with pending retries in turn, dead letters left out. */
@Timeout(60)
class PendingKeyScanTest {
    @RegisterExtension
    final OutboxFixture outbox = OutboxFixture.migrated();

    @BeforeEach
    void setUp() {
        for (int i = 0; i < 25; i++) {
            outbox.insert("t", "orders", "key-" + i, "{}");
            outbox.insert("t", "orders", "key-" + i, "{}");
        }
        outbox.insert("t", "orders", "dead-key", "{}");
        // Copies in outbox_retries, as the relay makes them after a failure; the dead letter is not visited.
        outbox.execute("INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash,"
                + " payload, headers, created_at, status)"
                + " SELECT id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, headers, created_at,"
                + " CASE WHEN partition_key = 'dead-key' THEN 'dead' ELSE 'pending' END FROM outbox_events");
    }

    private PendingKeyScan scan(int partitions) {
        OutboxRelayConfig config = outbox.config("a").partitions(partitions).build();
        return new PendingKeyScan(OutboxRelay.jdbi(outbox.dataSource(), config), config, new RelaySql(config.schema()));
    }

    private List<Integer> hashes(String partitionFilter) {
        return outbox.longs("SELECT DISTINCT ordering_hash FROM outbox_retries WHERE status = 'pending' AND " + partitionFilter
                + " ORDER BY 1").stream().map(Long::intValue).toList();
    }

    @Test
    void visitsEveryKeyWithPendingRetriesInTurnGoingRoundInACircle() {
        PendingKeyScan scan = scan(1);
        List<Integer> all = hashes("true");
        assertEquals(25, all.size());

        List<Integer> chosen = new ArrayList<>();
        for (int call = 0; call < 5; call++) {
            chosen.addAll(scan.next(Set.of(0), 10, 10));
            assertFalse(scan.lapCompleted(), "a call that filled its batch did not need the whole circle");
        }

        List<Integer> twice = new ArrayList<>(all);
        twice.addAll(all);
        assertEquals(twice, chosen, "each key once per lap, in hash order, resuming where the last call stopped");
    }

    @Test
    void keepsOnlyKeysOfTheGivenPartitionsAndSaysWhenItWentAllTheWayRound() {
        PendingKeyScan scan = scan(4);
        List<Integer> owned = hashes(RelaySql.partitionOf("ordering_hash", "4") + " IN (1, 3)");
        List<Integer> all = hashes("true");

        assertEquals(owned, scan.next(Set.of(1, 3), 100, 100));
        assertTrue(scan.lapCompleted(), "it reached the last key with room to spare");

        List<Integer> firstSeven = all.subList(0, 7);
        assertEquals(owned.stream().filter(firstSeven::contains).toList(), scan.next(Set.of(1, 3), 100, 7),
                "a new lap starts from the first key; one query visits at most the budget");
        assertFalse(scan.lapCompleted());
    }
}

package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jdbi.v3.core.Jdbi;

/**
 * Chooses the ordering keys (by their 32-bit hash) of the next retry round: it walks the hashes that have
 * pending retries in a circle, resuming where the previous batch stopped, and keeps those of the
 * given partitions. Every key with pending events is visited in turn, each at the cost of one index
 * probe, so neither a key with a long backlog nor one waiting for a retry can starve the others.
 * Used by the worker thread only.
 */
final class PendingKeyScan {
    private static final long FIRST = Integer.MIN_VALUE;
    private static final long LAST = Integer.MAX_VALUE;

    private final Jdbi jdbi;
    private final int partitions;
    private final String pendingKeys;
    private long from = FIRST;
    private boolean lapCompleted;

    PendingKeyScan(Jdbi jdbi, OutboxRelayConfig config, RelaySql sql) {
        this.jdbi = jdbi;
        this.partitions = config.partitions();
        this.pendingKeys = sql.pendingRetryKeys;
    }

    private record PendingKey(int hash, int partition) {
    }

    /**
     * Up to {@code wanted} hashes of the given partitions, visiting at most {@code budget} hashes per
     * query; after the last hash it goes on from the first, at most up to where this call began.
     */
    List<Integer> next(Set<Integer> ownedPartitions, int wanted, int budget) {
        List<Integer> chosen = new ArrayList<>(wanted);
        long began = from;
        lapCompleted = false;
        boolean wrapped = false;
        while (true) {
            List<PendingKey> visited = visit(from, budget);
            for (PendingKey key : visited) {
                if (wrapped && key.hash() >= began) {
                    from = began;
                    lapCompleted = true;
                    return chosen;
                }
                if (ownedPartitions.contains(key.partition())) {
                    chosen.add(key.hash());
                    if (chosen.size() == wanted) {
                        from = after(key.hash());
                        return chosen;
                    }
                }
            }
            if (visited.size() == budget) {
                from = after(visited.get(visited.size() - 1).hash());
                return chosen;
            }
            // Past the last hash: go on from the first, unless this call began there.
            from = FIRST;
            if (wrapped || began == FIRST) {
                lapCompleted = true;
                return chosen;
            }
            wrapped = true;
        }
    }

    /** Whether the last {@link #next} call went all the way round: every key with pending retries has been visited since. */
    boolean lapCompleted() {
        return lapCompleted;
    }

    private static long after(int hash) {
        return hash == LAST ? FIRST : hash + 1L;
    }

    private List<PendingKey> visit(long fromHash, int limit) {
        return jdbi.withHandle(h -> h.createQuery(pendingKeys)
                .bind("from", (int) fromHash)
                .bind("limit", limit)
                .bind("partitions", partitions)
                .map((rs, ctx) -> new PendingKey(rs.getInt(1), rs.getInt(2)))
                .list());
    }
}

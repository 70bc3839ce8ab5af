package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where the events not yet consumed under a set of snapshots are, in txid terms: at or above the
 * lowest xmax, or among the in-progress txids below it. Read from the snapshots' text form
 * {@code xmin:xmax:xip,...}, so the batch read can hand PostgreSQL plain bounds for its txid index.
 */
record ConsumedSnapshots(String xmax, List<String> xip) {

    /** The bounds over {@code snapshots} (null entries are partitions not read; at least one is not). */
    static ConsumedSnapshots of(String[] snapshots) {
        long lowestXmax = Long.MAX_VALUE;
        List<long[]> inProgress = new ArrayList<>();
        // Partitions that finished the same batch share one snapshot: each distinct one is parsed once.
        Set<String> parsed = new HashSet<>();
        for (String snapshot : snapshots) {
            if (snapshot == null || !parsed.add(snapshot)) {
                continue;
            }
            String[] parts = snapshot.split(":", -1);
            if (parts.length != 3) {
                throw new IllegalStateException("not a pg_snapshot: " + snapshot);
            }
            lowestXmax = Math.min(lowestXmax, Long.parseLong(parts[1]));
            if (!parts[2].isEmpty()) {
                String[] xids = parts[2].split(",");
                long[] values = new long[xids.length];
                for (int i = 0; i < xids.length; i++) {
                    values[i] = Long.parseLong(xids[i]);
                }
                inProgress.add(values);
            }
        }
        if (lowestXmax == Long.MAX_VALUE) {
            throw new IllegalArgumentException("no snapshot given");
        }
        TreeSet<Long> below = new TreeSet<>();
        for (long[] values : inProgress) {
            for (long xid : values) {
                // One at or above the lowest xmax is found by the range scan already.
                if (xid < lowestXmax) {
                    below.add(xid);
                }
            }
        }
        List<String> xip = new ArrayList<>(below.size());
        below.forEach(xid -> xip.add(Long.toString(xid)));
        return new ConsumedSnapshots(Long.toString(lowestXmax), List.copyOf(xip));
    }
}

package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What the waves of one page (publish path) or one retry round decided for its events; events in
 * none of the lists are unsettled (not sent: broker unavailable, lease no longer safe), and are read again.
 */
final class Settlement {
    /** An attempt that failed; {@code attempts} counts it; retried after {@code delayMillis}. */
    record Failed(ClaimedEvent event, int attempts, long delayMillis, String error) {
    }

    /** An event given up on; {@code attempts} counts every attempt made (0 for a row never sent). */
    record Dead(ClaimedEvent event, int attempts, String error) {
    }

    final List<ClaimedEvent> published = new ArrayList<>();
    final List<Failed> failed = new ArrayList<>();
    final List<Dead> dead = new ArrayList<>();
    /** Publish path only: events that follow their key's retry (held back, or behind a failure in this page). */
    final List<ClaimedEvent> diverted = new ArrayList<>();

    /** Ids of every settled event. */
    Set<Long> settledIds() {
        Set<Long> ids = new HashSet<>();
        published.forEach(e -> ids.add(e.id()));
        failed.forEach(f -> ids.add(f.event().id()));
        dead.forEach(d -> ids.add(d.event().id()));
        diverted.forEach(e -> ids.add(e.id()));
        return ids;
    }

    boolean isEmpty() {
        return published.isEmpty() && failed.isEmpty() && dead.isEmpty() && diverted.isEmpty();
    }
}

package dev.idempotency.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jdbi.v3.core.Jdbi;

/**
 * The exact accounting after a workload: what the database holds (business rows per key, committed
 * outbox events) against what the callers saw ({@link Ledger}) and what the sinks received
 * ({@link PublishedEvents}). {@link #print(String)} shows the table; {@link #assertExact()} fails
 * with it when anything was lost, doubled, reordered or reached a caller as an unclear error.
 */
final class Accounting {
    /** A committed outbox event of the workload's tenant. */
    record CommittedEvent(long id, String messageId, String orderingKey, String requestKey) {
    }

    private final Map<String, Long> rows = new LinkedHashMap<>();
    private final List<String> problems = new ArrayList<>();
    private final Map<String, Object> figures = new LinkedHashMap<>();

    private Accounting() {
    }

    /** Committed outbox events of {@code tenant}, in id order. */
    static List<CommittedEvent> committedEvents(Jdbi jdbi, String tenant) {
        return jdbi.withHandle(h -> h.createQuery("SELECT id, message_id::text AS message_id, "
                        + "tenant_id || '/' || topic || '/' || partition_key AS ordering_key, "
                        + "payload->>'key' AS request_key FROM outbox_events WHERE tenant_id = :t ORDER BY id")
                .bind("t", tenant)
                .map((rs, ctx) -> new CommittedEvent(rs.getLong("id"), rs.getString("message_id"),
                        rs.getString("ordering_key"), rs.getString("request_key")))
                .list());
    }

    /**
     * Waits (bounded) until the sink has seen every committed event of {@code tenant}; returns
     * whether it did. A false return is reported by the accounting as lost events.
     */
    static boolean awaitPublished(Jdbi jdbi, String tenant, PublishedEvents published, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            List<String> ids = committedEvents(jdbi, tenant).stream().map(CommittedEvent::messageId).toList();
            if (published.containsAll(ids)) {
                return true;
            }
            Thread.sleep(200);
        }
        return false;
    }

    /**
     * What a move of the database's history may not cost, judged on the database as it is now (the history
     * that won): every committed event of {@code tenant} published at least once, and per ordering key first
     * published in id order. Publications of events the move took away (committed on the lost history, so
     * in no database now) are allowed and counted apart; so are the callers' outcomes that went with them.
     */
    static Accounting ofMovedHistory(Jdbi jdbi, String tenant, PublishedEvents published, Map<String, Object> moves) {
        Accounting a = new Accounting();
        List<CommittedEvent> events = committedEvents(jdbi, tenant);
        Map<String, Integer> counts = published.countsByMessageId();
        Map<String, Long> outboxIds = new HashMap<>();
        events.forEach(e -> outboxIds.put(e.messageId(), e.id()));
        int lost = 0;
        for (CommittedEvent e : events) {
            if (counts.getOrDefault(e.messageId(), 0) == 0 && ++lost <= 10) {
                a.problems.add("event " + e.id() + " (" + e.orderingKey() + ") was never published");
            }
        }
        a.figures.putAll(moves);
        a.figures.put("events in the database now", events.size());
        a.figures.put("publications received", published.size());
        a.figures.put("events published more than once", counts.entrySet().stream()
                .filter(c -> outboxIds.containsKey(c.getKey()) && c.getValue() > 1).count());
        a.figures.put("published events of the lost history", counts.keySet().stream()
                .filter(id -> !outboxIds.containsKey(id)).count());
        a.figures.put("events lost", lost);
        a.figures.put("first publications out of id order", firstPublicationOrderViolations(published, outboxIds, a.problems));
        return a;
    }

    /** Compares the database, the callers' ledger and the publications. */
    static Accounting of(Jdbi jdbi, String tenant, Ledger ledger, PublishedEvents published) {
        Accounting a = new Accounting();
        Map<String, Long> effects = new HashMap<>();
        jdbi.useHandle(h -> h.createQuery("SELECT request_key, count(*) AS n FROM effects WHERE tenant_id = :t GROUP BY request_key")
                .bind("t", tenant)
                .map((rs, ctx) -> Map.entry(rs.getString("request_key"), rs.getLong("n")))
                .forEach(e -> effects.put(e.getKey(), e.getValue())));
        List<CommittedEvent> events = committedEvents(jdbi, tenant);
        Map<String, Integer> eventsPerKey = new HashMap<>();
        events.forEach(e -> eventsPerKey.merge(e.requestKey(), 1, Integer::sum));

        Map<String, Ledger.KeyRecord> keys = ledger.keys();
        int callers = 0;
        int withoutOutcome = 0;
        int doubleApplied = 0;
        int doubleFirstRuns = 0;
        int missingEffects = 0;
        int wrongResults = 0;
        int eventMismatch = 0;
        for (Map.Entry<String, Ledger.KeyRecord> entry : keys.entrySet()) {
            String key = entry.getKey();
            Ledger.KeyRecord record = entry.getValue();
            callers += record.callers.get();
            long effectRows = effects.getOrDefault(key, 0L);
            if (effectRows > 1) {
                doubleApplied++;
                a.problems.add("key " + key + " has " + effectRows + " business rows");
            }
            if (record.firstRuns.get() > 1) {
                doubleFirstRuns++;
                a.problems.add("key " + key + ": " + record.firstRuns.get() + " callers were told they ran it first");
            }
            if (record.outcomes.get() < record.callers.get()) {
                withoutOutcome++;
                a.problems.add("key " + key + ": " + (record.callers.get() - record.outcomes.get())
                        + " callers got no outcome before their deadline");
            }
            if (record.outcomes.get() > 0 && effectRows == 0) {
                missingEffects++;
                a.problems.add("key " + key + ": callers got an outcome but no business row exists");
            }
            if (record.wrongResults.get() > 0) {
                wrongResults++;
                a.problems.add("key " + key + ": " + record.wrongResults.get() + " outcomes carried another key's result");
            }
            if (eventsPerKey.getOrDefault(key, 0) != effectRows) {
                eventMismatch++;
                a.problems.add("key " + key + ": " + eventsPerKey.getOrDefault(key, 0) + " outbox events for "
                        + effectRows + " business rows");
            }
        }
        Set<String> strangers = new HashSet<>(effects.keySet());
        strangers.removeAll(keys.keySet());
        if (!strangers.isEmpty()) {
            a.problems.add("business rows for keys no caller ran: " + strangers);
        }

        Map<String, Integer> counts = published.countsByMessageId();
        int lost = 0;
        int publishedTwice = 0;
        for (CommittedEvent e : events) {
            int n = counts.getOrDefault(e.messageId(), 0);
            if (n == 0) {
                lost++;
                if (lost <= 10) {
                    a.problems.add("event " + e.id() + " (" + e.orderingKey() + ") was never published");
                }
            } else if (n > 1) {
                publishedTwice++;
            }
        }
        Map<String, Long> outboxIds = new HashMap<>();
        events.forEach(e -> outboxIds.put(e.messageId(), e.id()));
        long phantom = counts.keySet().stream().filter(id -> !outboxIds.containsKey(id)).count();
        if (phantom > 0) {
            a.problems.add(phantom + " published events were never committed");
        }
        int orderViolations = firstPublicationOrderViolations(published, outboxIds, a.problems);

        a.problems.addAll(ledger.unclear().stream().map(u -> "unclear exception: " + u).limit(20).toList());

        a.figures.put("keys", keys.size());
        a.figures.put("callers (operations)", callers);
        a.figures.put("duplicate callers", callers - keys.size());
        a.figures.put("run attempts incl. retries", ledger.attempts());
        ledger.retriedBy().forEach((kind, n) -> a.figures.put("  retried after " + kind, n));
        ledger.faults().forEach((kind, n) -> a.figures.put("fault injected: " + kind, n));
        a.figures.put("callers without outcome", withoutOutcome);
        a.figures.put("unclear exceptions", ledger.unclear().size());
        a.figures.put("effects double-applied", doubleApplied);
        a.figures.put("keys told 'first run' twice", doubleFirstRuns);
        a.figures.put("outcomes without effect", missingEffects);
        a.figures.put("outcomes with a wrong result", wrongResults);
        a.figures.put("keys whose events != effects", eventMismatch);
        a.figures.put("events committed", events.size());
        a.figures.put("publications received", published.size());
        a.figures.put("events lost", lost);
        a.figures.put("events published more than once", publishedTwice);
        a.figures.put("first publications out of id order", orderViolations);
        return a;
    }

    /**
     * Per ordering key, each event's first publication must come after its predecessors' first
     * publications (outbox id order; message ids map to outbox ids, unknown ones are counted as phantoms).
     */
    private static int firstPublicationOrderViolations(PublishedEvents published, Map<String, Long> outboxIds,
                                                       List<String> problems) {
        Map<String, Long> lastFirst = new HashMap<>();
        Set<String> seen = new HashSet<>();
        int violations = 0;
        for (PublishedEvents.Publication p : published.all()) {
            Long id = outboxIds.get(p.messageId());
            if (id == null || !seen.add(p.messageId())) {
                continue;
            }
            Long previous = lastFirst.get(p.orderingKey());
            if (previous != null && previous > id) {
                violations++;
                if (violations <= 10) {
                    problems.add("ordering key " + p.orderingKey() + ": event " + id + " first published after " + previous);
                }
            } else {
                lastFirst.put(p.orderingKey(), id);
            }
        }
        return violations;
    }

    Object figure(String name) {
        return figures.get(name);
    }

    List<String> problems() {
        return List.copyOf(problems);
    }

    /** The accounting table, as a test prints it. */
    String table(String title) {
        StringBuilder out = new StringBuilder("\n=== ").append(title).append(" ===\n");
        figures.forEach((name, value) -> out.append(String.format("  %-52s %10s%n", name, value)));
        if (!problems.isEmpty()) {
            out.append("  problems:\n");
            problems.stream().limit(40).forEach(p -> out.append("    - ").append(p).append('\n'));
        }
        return out.toString();
    }

    void print(String title) {
        System.out.println(table(title));
    }

    /** Fails, with the table, unless nothing was lost, doubled, reordered or unclear. */
    void assertExact(String title) {
        if (!problems.isEmpty()) {
            throw new AssertionError(table(title));
        }
    }
}

package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a test's broker received, shared by the test publishers of all relay instances: every
 * acknowledged publication in order, the order of first publications per ordering key, who first
 * published each event, and any event that was inside two publish calls at the same time.
 */
final class PublicationLog {
    private final Map<Long, Integer> inFlight = new HashMap<>();
    private final Set<Long> concurrentlyPublished = new HashSet<>();
    private final List<String> sameKeyInOneCall = new ArrayList<>();
    private final Map<String, List<Long>> firstPublicationsByKey = new LinkedHashMap<>();
    private final Map<Long, String> firstPublisher = new HashMap<>();
    private final Map<Long, Integer> publicationCounts = new HashMap<>();
    private final List<Long> publications = new ArrayList<>();

    static String keyOf(OutboxEvent e) {
        return e.tenant() + "/" + e.topic() + "/" + e.partitionKey();
    }

    synchronized void begin(List<OutboxEvent> events) {
        Set<String> keys = new HashSet<>();
        for (OutboxEvent e : events) {
            if (inFlight.merge(e.id(), 1, Integer::sum) > 1) {
                concurrentlyPublished.add(e.id());
            }
            if (!keys.add(keyOf(e))) {
                sameKeyInOneCall.add(keyOf(e));
            }
        }
    }

    synchronized void end(List<OutboxEvent> events) {
        for (OutboxEvent e : events) {
            inFlight.computeIfPresent(e.id(), (id, n) -> n == 1 ? null : n - 1);
        }
    }

    synchronized void acknowledged(String publisher, OutboxEvent e) {
        publications.add(e.id());
        if (publicationCounts.merge(e.id(), 1, Integer::sum) == 1) {
            firstPublisher.put(e.id(), publisher);
            firstPublicationsByKey.computeIfAbsent(keyOf(e), k -> new ArrayList<>()).add(e.id());
        }
    }

    synchronized Set<Long> concurrentlyPublished() {
        return Set.copyOf(concurrentlyPublished);
    }

    synchronized List<String> sameKeyInOneCall() {
        return List.copyOf(sameKeyInOneCall);
    }

    /** Per key "tenant/topic/partitionKey", the ids in the order they were first acknowledged. */
    synchronized Map<String, List<Long>> firstPublicationsByKey() {
        Map<String, List<Long>> copy = new LinkedHashMap<>();
        firstPublicationsByKey.forEach((k, v) -> copy.put(k, List.copyOf(v)));
        return copy;
    }

    synchronized boolean published(long id) {
        return publicationCounts.containsKey(id);
    }

    synchronized int publicationCount(long id) {
        return publicationCounts.getOrDefault(id, 0);
    }

    synchronized String firstPublisher(long id) {
        return firstPublisher.get(id);
    }

    /** Every acknowledged publication, duplicates included, in order. */
    synchronized List<Long> publications() {
        return List.copyOf(publications);
    }

    /** Keys whose first publications are not in increasing id order. */
    synchronized List<String> keysOutOfOrder() {
        List<String> bad = new ArrayList<>();
        firstPublicationsByKey.forEach((key, ids) -> {
            for (int i = 1; i < ids.size(); i++) {
                if (ids.get(i) < ids.get(i - 1)) {
                    bad.add(key + " " + ids);
                    return;
                }
            }
        });
        return bad;
    }
}

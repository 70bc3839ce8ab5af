package dev.idempotency.faults;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Every publication a sink (in-JVM publisher, webhook receiver, broker consumer) saw, in the order
 * it saw them: event id and ordering key. Duplicates are kept, so the accounting can count them.
 */
final class PublishedEvents {
    /** One publication: the outbox event id and its ordering key (tenant/topic/partition key). */
    record Publication(long id, String orderingKey) {
    }

    private final List<Publication> publications = new ArrayList<>();

    synchronized void record(long id, String tenant, String topic, String partitionKey) {
        publications.add(new Publication(id, tenant + "/" + topic + "/" + partitionKey));
    }

    synchronized List<Publication> all() {
        return List.copyOf(publications);
    }

    /** How many times each event id was published. */
    synchronized Map<Long, Integer> countsById() {
        Map<Long, Integer> counts = new HashMap<>();
        for (Publication p : publications) {
            counts.merge(p.id(), 1, Integer::sum);
        }
        return counts;
    }

    synchronized boolean containsAll(java.util.Collection<Long> ids) {
        java.util.Set<Long> seen = new java.util.HashSet<>();
        publications.forEach(p -> seen.add(p.id()));
        return seen.containsAll(ids);
    }

    synchronized int size() {
        return publications.size();
    }
}

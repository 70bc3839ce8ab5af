package dev.idempotency.faults;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Every publication a sink (in-JVM publisher, webhook receiver, broker consumer) saw, in the order
 * it saw them: message id and ordering key. Duplicates are kept, so the accounting can count them.
 * Sinks see only what a consumer sees, the message id; {@link Accounting} maps it to the outbox id.
 */
final class PublishedEvents {
    /** One publication: the event's message id and its ordering key (tenant/topic/partition key). */
    record Publication(String messageId, String orderingKey) {
    }

    private final List<Publication> publications = new ArrayList<>();

    synchronized void record(String messageId, String tenant, String topic, String partitionKey) {
        publications.add(new Publication(messageId, tenant + "/" + topic + "/" + partitionKey));
    }

    synchronized List<Publication> all() {
        return List.copyOf(publications);
    }

    /** How many times each message id was published. */
    synchronized Map<String, Integer> countsByMessageId() {
        Map<String, Integer> counts = new HashMap<>();
        for (Publication p : publications) {
            counts.merge(p.messageId(), 1, Integer::sum);
        }
        return counts;
    }

    synchronized boolean containsAll(java.util.Collection<String> messageIds) {
        java.util.Set<String> seen = new java.util.HashSet<>();
        publications.forEach(p -> seen.add(p.messageId()));
        return seen.containsAll(messageIds);
    }

    synchronized int size() {
        return publications.size();
    }
}

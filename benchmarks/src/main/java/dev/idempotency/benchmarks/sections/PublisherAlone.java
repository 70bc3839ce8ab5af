package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Section 14's third cell: the library's publisher with no relay around it, called as the relay's
 * dispatcher calls it, so that the time a relay drain takes splits into the publisher's share and the
 * relay's own (reading, settling). The events are cut into waves in id order: a wave ends at
 * {@code waveSize} events or before an ordering key it already holds, as a relay page's first wave is.
 */
final class PublisherAlone {

    private PublisherAlone() {
    }

    /** The waves the relay would send {@code events} in: at most {@code waveSize} each, no ordering key twice. */
    static List<List<OutboxEvent>> waves(List<OutboxEvent> events, int waveSize) {
        List<List<OutboxEvent>> waves = new ArrayList<>();
        List<OutboxEvent> wave = new ArrayList<>();
        Set<List<String>> keys = new HashSet<>();
        for (OutboxEvent event : events) {
            List<String> key = List.of(event.tenant(), event.topic(), event.partitionKey());
            if (wave.size() == waveSize || !keys.add(key)) {
                waves.add(wave);
                wave = new ArrayList<>();
                keys.clear();
                keys.add(key);
            }
            wave.add(event);
        }
        if (!wave.isEmpty()) {
            waves.add(wave);
        }
        return waves;
    }

    /**
     * Publishes {@code events} through a new publisher of {@code destination}, wave after wave, and returns
     * the seconds from the first call to the last result. Fails when any event was not PUBLISHED.
     */
    static double publish(BrokerPath.Destination destination, List<OutboxEvent> events, int waveSize) {
        List<List<OutboxEvent>> waves = waves(events, waveSize);
        try (Publisher publisher = destination.relayPublisher()) {
            long started = System.nanoTime();
            for (List<OutboxEvent> wave : waves) {
                List<PublishResult> results = publisher.publish(wave);
                for (PublishResult result : results) {
                    if (result.status() != PublishResult.Status.PUBLISHED) {
                        throw new IllegalStateException("the publisher alone did not publish an event: " + result);
                    }
                }
            }
            return (System.nanoTime() - started) / 1e9;
        }
    }
}

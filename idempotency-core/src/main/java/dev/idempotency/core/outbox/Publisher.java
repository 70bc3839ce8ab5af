package dev.idempotency.core.outbox;

import java.util.List;

/**
 * Sends outbox events to a broker or endpoint. Implementations live in the relay, one sub-package
 * each, so that only the chosen one loads its client library.
 *
 * <p>Contract: {@link #publish(List)} sends every event (pipelined where the broker allows), waits
 * for all broker acknowledgements together, and returns one {@link PublishResult} per event, in the
 * same order. It reports per-event failures as results instead of throwing. The relay never passes
 * two events of the same {@code (tenant, topic, partitionKey)} in one call, so a publisher may send a
 * batch in any order. Each message carries {@link OutboxEvent#messageId()} (globally unique, never the
 * outbox row id) as its message id or dedup header, and the tenant, topic and partition key as headers.
 */
public interface Publisher extends AutoCloseable {

    /** Publishes {@code events}; returns one result per event, in order. Never null. */
    List<PublishResult> publish(List<OutboxEvent> events);

    /** Releases connections; in-flight calls may fail. */
    @Override
    void close();
}

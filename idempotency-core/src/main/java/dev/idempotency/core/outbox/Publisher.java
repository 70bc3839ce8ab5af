package dev.idempotency.core.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Sends outbox events to a broker or endpoint. Implementations live in the relay, one sub-package
 * each, so that only the chosen one loads its client library.
 *
 * <p>Contract: {@link #publish(List)} sends every event (pipelined where the broker allows), waits
 * for all broker acknowledgements together, and returns one {@link PublishResult} per event, in the
 * same order. It reports per-event failures as results instead of throwing. The relay never passes
 * two events of the same {@code (tenant, topic, partitionKey)} in one call, so a publisher may send a
 * batch in any order. Each message carries {@link OutboxEvent#messageId()} (globally unique, never the
 * outbox row id) as its message id or dedup header, and the tenant, topic and partition key as headers;
 * and the event's {@link OutboxEvent#traceHeaders()}, unchanged, in the broker's own header field, so
 * that the writer's trace reaches the consumer.
 *
 * <p>Failures are told apart by who they are about. {@link PublishResult#retry(String)} and
 * {@link PublishResult#rejected(String)} are about one event: the relay counts an attempt against
 * it and dead-letters it after too many (or at once). {@link PublishResult#unavailable(String)} is
 * about the broker: it could not be reached, or the connection died under the call. The relay then
 * counts nothing, pauses all publishing with exponential backoff, logs the outage once when it
 * starts and once when it ends, and resends the same events in order. A call may mix the kinds.
 *
 * <p>Time limits: a publisher bounds its own calls with its own timeouts and says how long one call
 * can take at most in {@link #maxCallDuration()}. The relay waits that long plus a margin, checks at
 * start that its partition leases outlast it, and never starts a call while an earlier one is still
 * running: a call that overruns the bound makes the relay treat the publisher as unavailable until
 * that call returns.
 */
public interface Publisher extends AutoCloseable {

    /** Publishes {@code events}; returns one result per event, in order. Never null. */
    List<PublishResult> publish(List<OutboxEvent> events);

    /**
     * The longest one {@link #publish(List)} call can take, enforced by this publisher's own timeouts
     * (connect, send and acknowledgement). Empty when the publisher does not bound its calls; the
     * relay then bounds them by its own {@code publishTimeout}. Default: empty.
     */
    default Optional<Duration> maxCallDuration() {
        return Optional.empty();
    }

    /**
     * The broker's name as OpenTelemetry's {@code messaging.system} attribute spells it
     * ({@code kafka}, {@code rabbitmq}, ...), for the relay's send spans. Default: {@code other}.
     */
    default String messagingSystem() {
        return "other";
    }

    /** Releases connections; in-flight calls may fail. */
    @Override
    void close();
}

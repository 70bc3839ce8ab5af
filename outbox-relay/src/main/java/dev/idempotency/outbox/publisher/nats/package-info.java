/**
 * {@link dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher}: publishes outbox events to
 * NATS JetStream with {@code Nats-Msg-Id} deduplication. The only package that loads the NATS client
 * ({@code io.nats:jnats}, an optional dependency).
 */
package dev.idempotency.outbox.publisher.nats;

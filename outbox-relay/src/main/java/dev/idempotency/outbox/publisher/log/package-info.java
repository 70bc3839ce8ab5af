/**
 * {@link dev.idempotency.outbox.publisher.log.LoggingPublisher}: writes outbox events to an SLF4J
 * logger instead of a broker, for a first run.
 */
package dev.idempotency.outbox.publisher.log;

/**
 * Publishers that send outbox events to a broker or endpoint, one sub-package each, so that only the
 * chosen one loads its client library; and what they share: the header names consumers read
 * ({@link dev.idempotency.outbox.publisher.OutboxHeaders}) and the choice of a publisher by name
 * ({@link dev.idempotency.outbox.publisher.Publishers}). How their configurations read and check string
 * settings is not API: {@code dev.idempotency.outbox.publisher.internal}.
 */
package dev.idempotency.outbox.publisher;

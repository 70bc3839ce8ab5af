/**
 * Exactly-once effects for message consumers: {@link dev.idempotency.core.consumer.IdempotentConsumer}
 * runs a handler once per message id and tells the caller whether to acknowledge the delivery.
 */
package dev.idempotency.core.consumer;

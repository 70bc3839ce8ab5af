/**
 * The transactional outbox: {@link dev.idempotency.core.outbox.OutboxWriter} records events inside
 * a callback's transaction; a relay later hands committed ones, as
 * {@link dev.idempotency.core.outbox.OutboxEvent}, to a {@link dev.idempotency.core.outbox.Publisher}.
 */
package dev.idempotency.core.outbox;

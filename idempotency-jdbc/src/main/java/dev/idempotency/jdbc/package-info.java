/**
 * The PostgreSQL implementation of the idempotency API on Jdbi:
 * {@link dev.idempotency.jdbc.PostgresIdempotentExecutor} and the transaction it hands to callbacks.
 */
package dev.idempotency.jdbc;

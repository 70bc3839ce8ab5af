/**
 * The public API of exactly-once effects on PostgreSQL: {@link dev.idempotency.core.IdempotentExecutor}
 * runs a callback once per {@code (tenant, key)} and replays its stored outcome afterwards; the
 * callback's business writes, stored outcome and outbox events commit together or not at all.
 * This package holds no JDBC code; {@code idempotency-jdbc} implements it on PostgreSQL.
 */
package dev.idempotency.core;

/**
 * Helpers the library's modules share: the rules for stored labels and schema names, the default
 * schema. <strong>Not API:</strong> these classes are public only
 * so that {@code idempotency-jdbc}, {@code idempotency-db} and {@code outbox-relay} can reach
 * them; they may change in any release without notice. Do not use them from application code.
 */
package dev.idempotency.core.internal;

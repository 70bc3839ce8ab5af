package dev.idempotency.core;

import java.time.Instant;

/**
 * A key this caller holds a lease on while its external step runs.
 *
 * @param key the idempotency key: pass it to the external system so that it deduplicates too
 * @param tenant the tenant
 * @param fencingToken identifies this holder; a completion with another token is refused
 * @param expiresAt when the lease runs out by the database clock; finish well before it
 */
public record LeasedKey(String key, String tenant, long fencingToken, Instant expiresAt) {
}

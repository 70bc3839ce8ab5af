package dev.idempotency.core;

/**
 * Lease mode: the lease ran out (and the sweeper may have marked the key failed) before the
 * completion step could record the outcome, so nothing was written. The external step did run:
 * its effect must be reconciled by hand (see the sweeper's {@code lease_expired} failures). Map to
 * HTTP 500; use a longer lease if external calls can take this long.
 */
public class LeaseLostException extends IdempotencyException {
    public LeaseLostException(String message) {
        super(message);
    }
}

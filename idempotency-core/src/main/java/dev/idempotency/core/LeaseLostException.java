package dev.idempotency.core;

/**
 * Lease mode: the lease ran out (and the sweeper may have marked the key failed) before the
 * completion step could record the outcome, so nothing was written. The external step did run:
 * the key is kept as an unknown outcome (failure code {@code lease_expired}, listed by the JDBC
 * module's {@code UnknownOutcomes} once the sweeper records it) until an operator reconciles it.
 * Map to HTTP 500; use a longer lease if external calls can take this long.
 */
public class LeaseLostException extends IdempotencyException {
    public LeaseLostException(String message) {
        super(message);
    }
}

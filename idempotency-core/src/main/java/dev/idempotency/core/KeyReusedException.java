package dev.idempotency.core;

/**
 * The key was first used for a request with a different fingerprint. The callback did not run and
 * the stored outcome is not revealed. Map to HTTP 422: the client must use a new key for a new request.
 */
public class KeyReusedException extends IdempotencyException {
    public KeyReusedException(String message) {
        super(message);
    }
}

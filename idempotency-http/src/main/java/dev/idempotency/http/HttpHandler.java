package dev.idempotency.http;

import dev.idempotency.core.IdempotentTransaction;

/**
 * The application's handling of a keyed request, run inside the key's transaction: its writes
 * through {@code tx} (and {@code tx.outbox()} events) commit with the stored response, or not at all.
 * Return the response the application would send.
 *
 * @param <TX> the executor's transaction type
 * @param <X> the checked exception the handler may throw
 */
@FunctionalInterface
public interface HttpHandler<TX extends IdempotentTransaction, X extends Exception> {
    HttpResponseData handle(TX tx) throws X;
}

package dev.idempotency.core;

/**
 * Lease mode's second step: records the external step's outcome in one transaction with the
 * stored result and outbox events. It runs only if the caller still holds the lease.
 *
 * @param <TX> the transaction type
 * @param <S> what the external step returned
 * @param <T> the result to store and replay
 * @param <X> the checked exception it may throw
 */
@FunctionalInterface
public interface CompletionStep<TX extends IdempotentTransaction, S, T, X extends Exception> {
    T complete(TX tx, S external) throws X;
}

package dev.idempotency.core;

/**
 * The work an {@link IdempotentExecutor} runs once per key, inside the executor's transaction.
 *
 * <p>Return the result to store and replay. Throw {@link BusinessFailure} for an outcome that must
 * be stored and replayed as a failure (its business writes are rolled back, the failure is kept);
 * any other exception rolls everything back so that a retry runs the callback again. Do not commit,
 * roll back or close the transaction yourself.
 *
 * @param <TX> the transaction type
 * @param <T> the result type
 * @param <X> the checked exception the callback may throw
 */
@FunctionalInterface
public interface IdempotentCallback<TX extends IdempotentTransaction, T, X extends Exception> {
    T run(TX tx) throws X;
}

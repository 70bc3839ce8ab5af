package dev.idempotency.core.consumer;

import dev.idempotency.core.IdempotentTransaction;

/**
 * Applies one message's effects in the executor's transaction. Throw
 * {@link dev.idempotency.core.BusinessFailure} for a message that can never be applied (stored and
 * acknowledged); any other exception rolls back and asks for redelivery.
 *
 * @param <TX> the transaction type
 * @param <X> the checked exception it may throw
 */
@FunctionalInterface
public interface MessageHandler<TX extends IdempotentTransaction, X extends Exception> {
    void handle(TX tx) throws X;
}

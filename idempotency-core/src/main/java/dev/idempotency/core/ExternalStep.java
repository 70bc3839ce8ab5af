package dev.idempotency.core;

/**
 * Lease mode's first step: work with effects outside the database (a card network call), run with
 * no transaction open while this caller holds the key's lease.
 *
 * <p>Pass {@link LeasedKey#key()} downstream where the other system accepts an idempotency key.
 * Return what the completion step needs. Throw {@link BusinessFailure} for a definite business
 * outcome (stored and replayed); any other exception frees the key so a retry runs this step again.
 *
 * @param <S> what the step hands to the completion step
 * @param <X> the checked exception it may throw
 */
@FunctionalInterface
public interface ExternalStep<S, X extends Exception> {
    S run(LeasedKey lease) throws X;
}

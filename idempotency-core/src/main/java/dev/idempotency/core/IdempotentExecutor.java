package dev.idempotency.core;

/**
 * Runs a callback at most once per {@code (tenant, key)} and hands every later caller with the
 * same pair the stored outcome, for as long as the key is retained.
 *
 * <p>The callback's business writes, its stored result and the outbox events it publishes commit
 * in one database transaction, or none of them do. Outcomes, by what is stored for the key:
 * <ul>
 *   <li>nothing yet: the callback runs and its result is stored ({@link Outcome#replayed()} false);</li>
 *   <li>a stored result: it is returned without running the callback ({@link Outcome#replayed()} true);</li>
 *   <li>a stored {@link BusinessFailure}: the same failure is thrown again, marked as replayed;</li>
 *   <li>another caller is running it: this call waits for it up to the wait budget, then throws
 *       {@link KeyInProgressException};</li>
 *   <li>a different request fingerprint: {@link KeyReusedException}, and the callback does not run.</li>
 * </ul>
 * Any other exception from the callback rolls everything back, the key included, so a retry runs
 * the callback again.
 *
 * @param <TX> the transaction type handed to callbacks (the JDBC implementation's gives a Jdbi handle)
 */
public interface IdempotentExecutor<TX extends IdempotentTransaction> {

    /**
     * Runs {@code callback} once for {@code (tenant, key)}; replays its stored result afterwards.
     * The result's class must be one a replay can rebuild safely: see
     * {@link IdempotencyConfig.Builder#allowResultTypes(Class[])}.
     *
     * @throws KeyInProgressException another caller holds the key past the wait budget (HTTP 409)
     * @throws BusinessFailure the callback's declared failure, first time or replayed
     * @throws InvalidIdempotencyKeyException the key or tenant is malformed (HTTP 400)
     * @throws ResultNotStorableException the result cannot be stored; nothing was committed
     * @throws X whatever the callback throws; nothing was committed
     */
    <T, X extends Exception> Outcome<T> run(String key, String tenant, IdempotentCallback<TX, T, X> callback) throws X;

    /**
     * As {@link #run(String, String, IdempotentCallback)}, with the result type a replay decodes to.
     * Any type Jackson can round-trip works here; no allow-list is needed.
     */
    <T, X extends Exception> Outcome<T> run(String key, String tenant, Class<T> resultType,
                                            IdempotentCallback<TX, T, X> callback) throws X;

    /**
     * As {@link #run(String, String, IdempotentCallback)}, binding the key to {@code fingerprint}:
     * a later call with the same key and another fingerprint gets {@link KeyReusedException} (HTTP 422).
     */
    <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                            IdempotentCallback<TX, T, X> callback) throws X;

    /** The fingerprint and result-type variant; see the other overloads. */
    <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                            Class<T> resultType, IdempotentCallback<TX, T, X> callback) throws X;
}

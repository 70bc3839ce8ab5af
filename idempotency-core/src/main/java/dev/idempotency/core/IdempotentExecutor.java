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
     * <p>A {@code Map}, {@code List} or JSON tree result is stored as JSON, and the first caller
     * gets it as every replay will: decoded from that JSON, with objects as {@code LinkedHashMap},
     * arrays as {@code ArrayList}, integers as {@code Integer} ({@code Long} beyond 32 bits,
     * {@code BigInteger} beyond 64) and decimals as {@code BigDecimal} with their digits and scale.
     * So the first run's result {@code equals} every replay's, value for value and type for type
     * (a {@code 5L} the callback put in its map comes back as {@code Integer} 5 to every caller).
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
     * Any type Jackson can round-trip works here; no allow-list is needed. For a map, collection,
     * JSON tree or {@code Object} type the first caller also gets the decoded copy, as in the short
     * form; any other type reaches the first caller as the callback returned it, so its JSON round
     * trip should be equal.
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

    /**
     * Lease mode, for work with effects outside the database that must not hold a transaction open:
     * <ol>
     *   <li>claims the key in a short committed transaction as {@code processing}, with a lease of
     *       {@code lease} (expiry by the database clock) and a fencing token;</li>
     *   <li>runs {@code externalStep} outside any transaction;</li>
     *   <li>runs {@code completion} in a second transaction that commits its writes, the result and
     *       outbox events only if this caller still holds the lease; otherwise
     *       {@link LeaseLostException} and nothing is written.</li>
     * </ol>
     * A duplicate arriving during the lease gets {@link KeyInProgressException} at once. If the
     * caller dies or overruns mid-way, the key stays {@code processing}, and later calls get
     * {@link KeyInProgressException}, until the sweeper stores it as failed ({@code lease_expired},
     * outcome unknown); from then on calls replay that failure. Neither state is ever reclaimed or
     * purged, whatever the retention: only an operator's resolution frees the key, so the external
     * step never runs twice for one key.
     *
     * <p>The request names the key, tenant, lease, result type and optional fingerprint by name:
     * <pre>{@code
     * executor.runWithLease(LeaseRequest.builder(key, tenant).lease(Duration.ofSeconds(30))
     *                 .fingerprint(fingerprint).resultType(Receipt.class).build(),
     *         lease -> cardNetwork.charge(request, lease.key()),
     *         (tx, charge) -> new Receipt(charge.id()));
     * }</pre>
     *
     * @param request the key, its lease ({@link LeaseRequest#lease()}: 100 ms to half the retention,
     *                {@link IdempotencyConfig#maxLease()}, else {@link IllegalArgumentException}), the
     *                result type and the fingerprint, if any
     */
    <S, T, X extends Exception> Outcome<T> runWithLease(LeaseRequest<T> request, ExternalStep<S, X> externalStep,
                                                        CompletionStep<TX, S, T, X> completion) throws X;
}

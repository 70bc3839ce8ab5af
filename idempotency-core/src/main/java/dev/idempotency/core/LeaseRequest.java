package dev.idempotency.core;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What a lease-mode call claims: a key of a tenant, how long its lease lasts, the result type a
 * replay decodes to and, optionally, the request's fingerprint. Immutable; the key and tenant are
 * checked when it is built, before any SQL. Built as
 * {@code LeaseRequest.builder(key, tenant).lease(Duration.ofSeconds(30)).resultType(Receipt.class).build()},
 * so that no two settings of the same type can be swapped by position.
 *
 * @param <T> the result type
 */
public final class LeaseRequest<T> {
    private final String key;
    private final String tenant;
    private final Duration lease;
    private final Class<T> resultType;
    private final RequestFingerprint fingerprint;

    private LeaseRequest(Builder<T> builder) {
        this.key = builder.key;
        this.tenant = builder.tenant;
        this.lease = builder.lease;
        this.resultType = builder.resultType;
        this.fingerprint = builder.fingerprint;
    }

    /** A request for {@code key} of {@code tenant}; set the lease and the result type, then build. */
    public static Builder<Object> builder(String key, String tenant) {
        return new Builder<>(key, tenant, null, null, null);
    }

    /** The idempotency key. */
    public String key() {
        return key;
    }

    /** The tenant the key belongs to. */
    public String tenant() {
        return tenant;
    }

    /**
     * How long the external step and the completion may take; the executor accepts 100 ms to half
     * its retention ({@link IdempotencyConfig#maxLease()}).
     */
    public Duration lease() {
        return lease;
    }

    /** The type the result is stored as and a replay decodes to. */
    public Class<T> resultType() {
        return resultType;
    }

    /** The request's fingerprint, if the key is bound to one (a reuse for another request gets {@link KeyReusedException}). */
    public Optional<RequestFingerprint> fingerprint() {
        return Optional.ofNullable(fingerprint);
    }

    /**
     * Settings of a {@link LeaseRequest}; {@link #lease(Duration)} and {@link #resultType(Class)} are
     * required.
     *
     * @param <T> the result type, fixed by {@link #resultType(Class)}
     */
    public static final class Builder<T> {
        private final String key;
        private final String tenant;
        private final Duration lease;
        private final Class<T> resultType;
        private final RequestFingerprint fingerprint;

        private Builder(String key, String tenant, Duration lease, Class<T> resultType, RequestFingerprint fingerprint) {
            this.key = key;
            this.tenant = tenant;
            this.lease = lease;
            this.resultType = resultType;
            this.fingerprint = fingerprint;
        }

        /** How long this caller holds the key: the external step and the completion must end within it. */
        public Builder<T> lease(Duration lease) {
            return new Builder<>(key, tenant, Objects.requireNonNull(lease, "lease"), resultType, fingerprint);
        }

        /** The type of the completion's result, which a replay decodes to. */
        public <R> Builder<R> resultType(Class<R> resultType) {
            return new Builder<>(key, tenant, lease, Objects.requireNonNull(resultType, "resultType"), fingerprint);
        }

        /** Binds the key to this request; omit it for no fingerprint. */
        public Builder<T> fingerprint(RequestFingerprint fingerprint) {
            return new Builder<>(key, tenant, lease, resultType, Objects.requireNonNull(fingerprint, "fingerprint"));
        }

        /**
         * The request.
         *
         * @throws InvalidIdempotencyKeyException the key or tenant is malformed
         * @throws IllegalStateException the lease or the result type was not set
         */
        public LeaseRequest<T> build() {
            IdempotencyKeys.validate(key, tenant);
            if (lease == null) {
                throw new IllegalStateException("A LeaseRequest needs a lease: call lease(Duration) before build()");
            }
            if (resultType == null) {
                throw new IllegalStateException("A LeaseRequest needs a result type: call resultType(Class) before build()");
            }
            return new LeaseRequest<>(this);
        }
    }
}

package dev.idempotency.http;

/**
 * The problems (RFC 9457) {@link IdempotentHttp} answers with. Each has a stable {@code type} URI,
 * {@link IdempotentHttpConfig#problemTypeBase()} followed by {@link #slug()}, and a fixed status.
 */
public enum ProblemType {
    /** The request needs a key and has none: 400, nothing recorded. */
    KEY_MISSING(400, "idempotency-key-missing", "Idempotency-Key header missing"),
    /** The key header is not exactly one key of 1 to the maximum printable characters in an accepted form: 400. */
    KEY_MALFORMED(400, "idempotency-key-malformed", "Idempotency-Key header malformed"),
    /** Another request with the key is running past the wait budget: 409 with Retry-After. */
    KEY_IN_PROGRESS(409, "idempotency-key-in-progress", "A request with this Idempotency-Key is in progress"),
    /** The key was used for another request (fingerprint): 422, the handler did not run. */
    KEY_REUSED(422, "idempotency-key-reused", "Idempotency-Key reused for another request"),
    /** The response could not be stored (too large, or refused by the executor): 500, nothing committed. */
    RESPONSE_NOT_STORABLE(500, "response-not-storable", "Response could not be stored for replay"),
    /** A database failure a retry may fix: 503 with Retry-After. */
    TEMPORARILY_UNAVAILABLE(503, "temporarily-unavailable", "Temporarily unavailable");

    private final int status;
    private final String slug;
    private final String title;

    ProblemType(int status, String slug, String title) {
        this.status = status;
        this.slug = slug;
        this.title = title;
    }

    /** The HTTP status. */
    public int status() {
        return status;
    }

    /** The last part of the type URI, e.g. {@code idempotency-key-missing}. */
    public String slug() {
        return slug;
    }

    /** The problem's title. */
    public String title() {
        return title;
    }

    /** The full type URI under {@code config}'s base. */
    public String uri(IdempotentHttpConfig config) {
        return config.problemTypeBase() + slug;
    }
}

package dev.idempotency.http;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.IdempotentTransaction;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.core.internal.tracing.SpanOutcomes;
import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.tracing.Tracing;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Idempotency-Key rules for HTTP, for any server adapter. For each request an adapter calls
 * {@link #handle}, and writes the {@link HttpResult} (or, when it {@linkplain HttpResult#passedThrough()
 * passed through}, handles the request as usual):
 * <ul>
 *   <li>a method and path that need no key ({@link IdempotentHttpConfig#requiresKey}) pass through untouched;</li>
 *   <li>no key where one is needed: 400 problem, nothing recorded; a key that is not exactly one
 *       key of 1 to {@link IdempotentHttpConfig#maxKeyLength()} printable ASCII characters, unquoted or
 *       as a Structured Field String ({@link IdempotentHttpConfig#keySyntax()}), in one field line: 400;</li>
 *   <li>a new key: the handler runs inside {@link IdempotentExecutor#run} for {@code (tenant, key)},
 *       bound to the request's fingerprint (method, path, query, content type, SHA-256 of the body), so
 *       its writes commit with the stored response. A 2xx, 3xx or declared business 4xx response is
 *       stored (status, allow-listed headers, content type, body); any other status, a body over
 *       {@link IdempotentHttpConfig#maxStoredBodyBytes()} (500 problem), or an exception rolls
 *       everything back, so a retry runs the handler again;</li>
 *   <li>the same key and fingerprint again: the stored response byte for byte, with
 *       {@code Idempotent-Replayed: true}; while the first is still running, the duplicate waits within
 *       the executor's wait budget, then gets that, or a 409 problem with {@code Retry-After};</li>
 *   <li>the same key with another fingerprint: 422 problem, the handler does not run;</li>
 *   <li>a transient database failure: 503 problem with {@code Retry-After}.</li>
 * </ul>
 * The tenant comes from the application (its authenticated principal), never from a client header.
 *
 * <p>Tracing ({@link Builder#tracing}): each request that needs a key is an INTERNAL span
 * {@code IdempotentHttp.handle} (the executor's run inside it), with {@code idempotency.outcome}:
 * {@code first_run}, {@code replay}, {@code not_stored}, {@code missing_key}, {@code invalid},
 * {@code in_progress}, {@code key_reused}, {@code not_storable}, {@code transient_failure} or
 * {@code error}. The key, the tenant, the path and the bodies are never attributes.
 *
 * @param <TX> the executor's transaction type
 */
public final class IdempotentHttp<TX extends IdempotentTransaction> {
    private static final Logger log = LoggerFactory.getLogger(IdempotentHttp.class);

    private final IdempotentExecutor<TX> executor;
    private final IdempotentHttpConfig config;
    private final Problems problems;
    private final Traces traces;

    private IdempotentHttp(Builder<TX> b) {
        this.executor = b.executor;
        this.config = b.config;
        this.problems = new Problems(config);
        this.traces = Traces.of(b.tracing);
    }

    /** A builder for rules running handlers through {@code executor}; the config defaults to {@link IdempotentHttpConfig#defaults()}. */
    public static <TX extends IdempotentTransaction> Builder<TX> builder(IdempotentExecutor<TX> executor) {
        return new Builder<>(executor);
    }

    /** The settings. */
    public IdempotentHttpConfig config() {
        return config;
    }

    /**
     * True when a request with this method and path needs a key; an adapter may skip buffering the
     * others. The path is the canonical one {@link HttpRequestData#builder} describes ({@link HttpPaths}).
     */
    public boolean requiresKey(String method, String path) {
        return config.requiresKey(method, path);
    }

    /**
     * Applies the rules to {@code request} for {@code tenant}: passes it through when its method and
     * path need no key, otherwise as {@link #handleRequiringKey}.
     *
     * @throws X what the handler threw; everything it wrote was rolled back and nothing was stored
     * @throws BusinessFailure a handler that throws one has it stored by the executor and rethrown on
     *         every replay; answer a declared 4xx ({@link IdempotentHttpConfig#storedClientErrors()}) instead
     * @throws IllegalArgumentException the tenant is malformed (an application error, not the client's)
     */
    public <X extends Exception> HttpResult handle(HttpRequestData request, String tenant,
                                                   HttpHandler<? super TX, X> handler) throws X {
        Objects.requireNonNull(request, "request");
        if (!config.requiresKey(request.method(), request.path())) {
            return HttpResult.passThrough();
        }
        return handleRequiringKey(request, tenant, handler);
    }

    /**
     * As {@link #handle}, for an endpoint that needs a key whatever its method and path (e.g. one an
     * annotation marks): never passes through.
     */
    public <X extends Exception> HttpResult handleRequiringKey(HttpRequestData request, String tenant,
                                                               HttpHandler<? super TX, X> handler) throws X {
        if (traces == Traces.none()) {
            return handleKeyed(request, tenant, handler);
        }
        try (TracedSpan span = traces.startInternal("IdempotentHttp.handle")) {
            try {
                HttpResult result = handleKeyed(request, tenant, handler);
                span.outcome(outcome(result));
                return result;
            } catch (Throwable e) {
                SpanOutcomes.threw(span, e);
                throw e;
            }
        }
    }

    /** The span outcome of a keyed request's result. */
    private static String outcome(HttpResult result) {
        return switch (result.kind()) {
            case FIRST_RUN -> SpanOutcomes.FIRST_RUN;
            case REPLAYED -> SpanOutcomes.REPLAY;
            case NOT_STORED, PASSED_THROUGH -> result.kind().name().toLowerCase(Locale.ROOT);
            case PROBLEM -> switch (result.problem()) {
                case KEY_MISSING -> "missing_key";
                case KEY_MALFORMED -> SpanOutcomes.INVALID;
                case KEY_IN_PROGRESS -> SpanOutcomes.IN_PROGRESS;
                case KEY_REUSED -> SpanOutcomes.KEY_REUSED;
                case RESPONSE_NOT_STORABLE -> "not_storable";
                case TEMPORARILY_UNAVAILABLE -> SpanOutcomes.TRANSIENT_FAILURE;
            };
        };
    }

    private <X extends Exception> HttpResult handleKeyed(HttpRequestData request, String tenant,
                                                         HttpHandler<? super TX, X> handler) throws X {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(handler, "handler");
        if (request.keyFieldLines().isEmpty()) {
            return problems.keyMissing();
        }
        String key;
        try {
            key = KeyHeaderParser.parse(request.keyFieldLines(), config.maxKeyLength(), config.keySyntax());
        } catch (KeyHeaderParser.MalformedKeyException e) {
            return problems.keyMalformed(e.getMessage());
        }
        try {
            IdempotencyKeys.validate(key, tenant);
        } catch (InvalidIdempotencyKeyException e) {
            if (!"key".equals(e.field())) {
                throw e; // the tenant is the application's, never the client's
            }
            return problems.keyMalformed("the " + e.getMessage());
        }
        return run(request, key, tenant, handler);
    }

    private <X extends Exception> HttpResult run(HttpRequestData request, String key, String tenant,
                                                 HttpHandler<? super TX, X> handler) throws X {
        RequestFingerprint fingerprint = HttpFingerprint.of(request);
        HttpResponseData[] firstResponse = new HttpResponseData[1];
        try {
            Outcome<StoredResponse> outcome = executor.run(key, tenant, fingerprint, StoredResponse.class, tx -> {
                HttpResponseData response = handler.handle(tx);
                if (response == null) {
                    throw new IllegalStateException("The handler returned no response; return the response it would send. "
                            + "Nothing was committed.");
                }
                if (!stored(response.status())) {
                    throw new NotStored(response); // rolls back the handler's writes and the key
                }
                if (response.bodyNoCopy().length > config.maxStoredBodyBytes()) {
                    throw new TooLarge(response.bodyNoCopy().length);
                }
                firstResponse[0] = response;
                return storable(response);
            });
            return outcome.replayed() ? replay(outcome.result()) : firstRun(firstResponse[0]);
        } catch (NotStored e) {
            HttpResponseData r = e.response;
            return new HttpResult(HttpResult.Kind.NOT_STORED, r.status(), r.contentType(), r.headers(), r.bodyNoCopy(), null);
        } catch (TooLarge e) {
            log.warn("A {} {} response was not stored and its writes were rolled back: its body is {} bytes, over "
                    + "maxStoredBodyBytes {}. Raise the limit or return a smaller response.",
                    request.method(), request.path(), e.size, config.maxStoredBodyBytes());
            return problems.responseNotStorable();
        } catch (ResultNotStorableException e) {
            log.warn("A {} {} response was not stored and its writes were rolled back: {}", request.method(), request.path(),
                    e.getMessage());
            return problems.responseNotStorable();
        } catch (KeyInProgressException e) {
            return problems.keyInProgress();
        } catch (KeyReusedException e) {
            return problems.keyReused();
        } catch (TransientFailureException e) {
            return problems.temporarilyUnavailable();
        }
    }

    private boolean stored(int status) {
        return (status >= 200 && status < 400) || config.storedClientErrors().contains(status);
    }

    private StoredResponse storable(HttpResponseData response) {
        List<HttpHeader> kept = new ArrayList<>();
        for (HttpHeader header : response.headers()) {
            if (config.replayedHeaders().contains(header.name().toLowerCase(Locale.ROOT))) {
                kept.add(header);
            }
        }
        return new StoredResponse(response.status(), response.contentType(), kept, response.bodyNoCopy());
    }

    private static HttpResult firstRun(HttpResponseData r) {
        List<HttpHeader> headers = new ArrayList<>(r.headers());
        headers.add(new HttpHeader(HttpResult.REPLAYED_HEADER, "false"));
        return new HttpResult(HttpResult.Kind.FIRST_RUN, r.status(), r.contentType(), headers, r.bodyNoCopy(), null);
    }

    private static HttpResult replay(StoredResponse stored) {
        List<HttpHeader> headers = new ArrayList<>(stored.headers());
        headers.add(new HttpHeader(HttpResult.REPLAYED_HEADER, "true"));
        return new HttpResult(HttpResult.Kind.REPLAYED, stored.status(), stored.contentType(), headers, stored.bodyNoCopy(), null);
    }

    /** Carries a response that must not be stored out of the transaction, rolling it back. */
    private static final class NotStored extends RuntimeException {
        final transient HttpResponseData response;

        NotStored(HttpResponseData response) {
            super("response status " + response.status() + " is not stored", null, false, false);
            this.response = response;
        }
    }

    /** The response body is over the size limit: rolls the transaction back. */
    private static final class TooLarge extends RuntimeException {
        final int size;

        TooLarge(int size) {
            super("response body of " + size + " bytes is over maxStoredBodyBytes", null, false, false);
            this.size = size;
        }
    }

    /** Mutable builder for {@link IdempotentHttp}. */
    public static final class Builder<TX extends IdempotentTransaction> {
        private final IdempotentExecutor<TX> executor;
        private IdempotentHttpConfig config = IdempotentHttpConfig.defaults();
        private Tracing tracing = Tracing.auto();

        private Builder(IdempotentExecutor<TX> executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
        }

        /** The settings; {@link IdempotentHttpConfig#defaults()} if not called. */
        public Builder<TX> config(IdempotentHttpConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /** Whether keyed requests are spans with their outcome; default {@link Tracing#auto()}. */
        public Builder<TX> tracing(Tracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /** The rules, ready for concurrent use. */
        public IdempotentHttp<TX> build() {
            return new IdempotentHttp<>(this);
        }
    }
}

package dev.idempotency.http;

import java.util.List;
import java.util.Objects;

/**
 * What an adapter writes to the client after {@link IdempotentHttp#handle}: unless the request
 * {@linkplain Kind#PASSED_THROUGH passed through}, the status, content type, headers and body, in
 * that form. A replay's headers include {@code Idempotent-Replayed: true}.
 */
public final class HttpResult {
    /** The header marking a replayed response (Stripe's name). */
    public static final String REPLAYED_HEADER = "Idempotent-Replayed";

    /** How the result came about. */
    public enum Kind {
        /** The request needs no key: the adapter handles it as if the module were not there; no response here. */
        PASSED_THROUGH,
        /** The handler ran and its response was stored; this is the handler's whole response, with {@code Idempotent-Replayed: false}. */
        FIRST_RUN,
        /** The stored response of an earlier request with the key; the handler did not run. */
        REPLAYED,
        /** The handler ran and answered 5xx or an undeclared 4xx: rolled back, not stored, passed through as is. */
        NOT_STORED,
        /** A problem+json answer; {@link #problem()} says which. */
        PROBLEM
    }

    private final Kind kind;
    private final int status;
    private final String contentType;
    private final List<HttpHeader> headers;
    private final byte[] body;
    private final ProblemType problem;

    HttpResult(Kind kind, int status, String contentType, List<HttpHeader> headers, byte[] body, ProblemType problem) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.status = status;
        this.contentType = contentType;
        this.headers = List.copyOf(headers);
        this.body = body;
        this.problem = problem;
    }

    static HttpResult passThrough() {
        return new HttpResult(Kind.PASSED_THROUGH, 0, null, List.of(), new byte[0], null);
    }

    /** How the result came about. */
    public Kind kind() {
        return kind;
    }

    /** True when the request needs no key and the adapter must handle it normally; nothing else here applies. */
    public boolean passedThrough() {
        return kind == Kind.PASSED_THROUGH;
    }

    /** True for a stored response replayed ({@link #headers()} hold {@code Idempotent-Replayed: true}; a first run's, {@code false}). */
    public boolean replayed() {
        return kind == Kind.REPLAYED;
    }

    /** The status to send; 0 when passed through. */
    public int status() {
        return status;
    }

    /** The Content-Type to send, or null for none. */
    public String contentType() {
        return contentType;
    }

    /** The headers to send besides Content-Type (no Content-Length: the adapter frames the body). */
    public List<HttpHeader> headers() {
        return headers;
    }

    /** The body bytes to send (a copy). */
    public byte[] body() {
        return body.clone();
    }

    /** The problem answered with, or null when the result is not {@link Kind#PROBLEM}. */
    public ProblemType problem() {
        return problem;
    }

    @Override
    public String toString() {
        return "HttpResult[" + kind + ", status=" + status + (problem == null ? "" : ", problem=" + problem.slug()) + "]";
    }
}

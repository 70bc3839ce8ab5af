package dev.idempotency.http;

import java.util.List;
import java.util.Objects;

/**
 * What {@link IdempotentHttp} needs of a request, whatever the server: the parts the fingerprint
 * covers (method, path, query, content type, body bytes) and the key header's field lines as the
 * server received them (one string per line, unjoined, so that two lines can be refused).
 */
public final class HttpRequestData {
    private final String method;
    private final String path;
    private final String query;
    private final String contentType;
    private final List<String> keyFieldLines;
    private final byte[] body;

    private HttpRequestData(Builder b) {
        this.method = b.method;
        this.path = b.path;
        this.query = b.query;
        this.contentType = b.contentType;
        this.keyFieldLines = List.copyOf(b.keyFieldLines);
        this.body = b.body.clone();
    }

    /**
     * A request with this method (e.g. {@code POST}) and path. The path must be the one the
     * application routes on, in its canonical spelling ({@link HttpPaths}): within the application
     * (no context path), without the query, percent-decoded, path parameters ({@code ;v=1}) removed,
     * dot and empty segments resolved, no trailing slash, e.g. {@code /payments}. Never pass the raw
     * request-target: {@code POST /payments;v=1} or {@code POST /%70ayments} would then skip a
     * {@code /payments} rule, and a retry spelled otherwise would be another request (422).
     */
    public static Builder builder(String method, String path) {
        return new Builder(method, path);
    }

    /** The request method, as received. */
    public String method() {
        return method;
    }

    /** The request's canonical path within the application (see {@link #builder}), without the query. */
    public String path() {
        return path;
    }

    /** The query string without {@code ?}, or null if the request had none. */
    public String query() {
        return query;
    }

    /** The request's Content-Type field value, or null if it had none. */
    public String contentType() {
        return contentType;
    }

    /** The field lines of the key header ({@link IdempotentHttpConfig#headerName()}), in order; empty if absent. */
    public List<String> keyFieldLines() {
        return keyFieldLines;
    }

    /** The body bytes (a copy); empty if none. */
    public byte[] body() {
        return body.clone();
    }

    byte[] bodyNoCopy() {
        return body;
    }

    /** Mutable builder for {@link HttpRequestData}. */
    public static final class Builder {
        private final String method;
        private final String path;
        private String query;
        private String contentType;
        private List<String> keyFieldLines = List.of();
        private byte[] body = new byte[0];

        private Builder(String method, String path) {
            this.method = Objects.requireNonNull(method, "method");
            this.path = Objects.requireNonNull(path, "path");
        }

        /** The query string without {@code ?}; null or empty for none (both fingerprint alike). */
        public Builder query(String query) {
            this.query = query;
            return this;
        }

        /** The Content-Type field value; null for none. */
        public Builder contentType(String contentType) {
            this.contentType = contentType;
            return this;
        }

        /** Every field line of the key header, as the server received them; an empty list when absent. */
        public Builder keyFieldLines(List<String> lines) {
            Objects.requireNonNull(lines, "lines");
            for (String line : lines) {
                Objects.requireNonNull(line, "key field line");
            }
            this.keyFieldLines = lines;
            return this;
        }

        /** The body bytes (copied at build); empty for none. */
        public Builder body(byte[] body) {
            this.body = Objects.requireNonNull(body, "body");
            return this;
        }

        /** Freezes the request. */
        public HttpRequestData build() {
            return new HttpRequestData(this);
        }
    }
}

package dev.idempotency.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The response a handler would send: final status, headers (all of them, cookies included), content
 * type and body bytes. {@link IdempotentHttp} decides from its status whether it is stored; the
 * first client receives it whole, replays receive its {@link StoredResponse} form.
 */
public final class HttpResponseData {
    private final int status;
    private final String contentType;
    private final List<HttpHeader> headers;
    private final byte[] body;

    private HttpResponseData(Builder b) {
        this.status = b.status;
        this.contentType = b.contentType;
        this.headers = List.copyOf(b.headers);
        this.body = b.body.clone();
    }

    /** A response with a final status, 200 to 599. */
    public static Builder builder(int status) {
        return new Builder(status);
    }

    /** The status code. */
    public int status() {
        return status;
    }

    /** The Content-Type, or null if the response has none. */
    public String contentType() {
        return contentType;
    }

    /** Every header but Content-Type, in order. */
    public List<HttpHeader> headers() {
        return headers;
    }

    /** The body bytes (a copy). */
    public byte[] body() {
        return body.clone();
    }

    byte[] bodyNoCopy() {
        return body;
    }

    /** Mutable builder for {@link HttpResponseData}. */
    public static final class Builder {
        private final int status;
        private String contentType;
        private final List<HttpHeader> headers = new ArrayList<>();
        private byte[] body = new byte[0];

        private Builder(int status) {
            if (status < 200 || status > 599) {
                throw new IllegalArgumentException("status must be a final status, 200 to 599 (was " + status + ")");
            }
            this.status = status;
        }

        /** The Content-Type; null for none. */
        public Builder contentType(String contentType) {
            this.contentType = contentType == null ? null : new HttpHeader("Content-Type", contentType).value();
            return this;
        }

        /** Adds a header line; a Content-Type line sets {@link #contentType(String)} instead. */
        public Builder header(String name, String value) {
            HttpHeader header = new HttpHeader(name, value);
            if (header.named("Content-Type")) {
                contentType = value;
            } else {
                headers.add(header);
            }
            return this;
        }

        /** The body bytes (copied at build). */
        public Builder body(byte[] body) {
            this.body = Objects.requireNonNull(body, "body");
            return this;
        }

        /** Freezes the response. */
        public HttpResponseData build() {
            return new HttpResponseData(this);
        }
    }
}

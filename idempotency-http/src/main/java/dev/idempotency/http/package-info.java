/**
 * The Idempotency-Key HTTP rules (draft-ietf-httpapi-idempotency-key-header-07, RFC 8941, RFC 9457)
 * free of any web framework: {@link dev.idempotency.http.IdempotentHttp} is the entry point an
 * adapter (a servlet filter, a Netty handler) calls with a {@link dev.idempotency.http.HttpRequestData}
 * and the application's {@link dev.idempotency.http.HttpHandler}.
 *
 * <p>The path an adapter passes (to {@code HttpRequestData.builder} and {@code requiresKey}) is the
 * path the application routes on, in one canonical spelling: within the application (no context
 * path), percent-decoded, path parameters ({@code ;v=1}) removed, empty and dot segments resolved,
 * no trailing slash. {@link dev.idempotency.http.HttpPaths} makes it from the segments a router
 * parsed, or from the raw path. The rules decide "key required" and fingerprint by it, so every
 * spelling of an endpoint gets the rules of its canonical spelling; a raw request-target would let
 * {@code POST /payments;v=1} or {@code POST /%70ayments} around a {@code /payments} rule.
 */
package dev.idempotency.http;

/**
 * The Idempotency-Key HTTP rules (draft-ietf-httpapi-idempotency-key-header-07, RFC 8941, RFC 9457)
 * free of any web framework: {@link dev.idempotency.http.IdempotentHttp} is the entry point an
 * adapter (a servlet filter, a Netty handler) calls with a {@link dev.idempotency.http.HttpRequestData}
 * and the application's {@link dev.idempotency.http.HttpHandler}.
 */
package dev.idempotency.http;

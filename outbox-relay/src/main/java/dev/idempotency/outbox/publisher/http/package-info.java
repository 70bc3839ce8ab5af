/**
 * {@link dev.idempotency.outbox.publisher.http.HttpWebhookPublisher}: posts outbox events to a
 * webhook with the JDK's HTTP client; no extra dependency.
 */
package dev.idempotency.outbox.publisher.http;

/**
 * What the publishers' configurations share to read and check their string settings (the command
 * line's and the Spring Boot starter's): {@link dev.idempotency.outbox.publisher.internal.PublisherSettings}
 * and {@link dev.idempotency.outbox.publisher.internal.SettingChecks}. Not API: anything here may change
 * or go away in any release; do not use it from application code.
 */
package dev.idempotency.outbox.publisher.internal;

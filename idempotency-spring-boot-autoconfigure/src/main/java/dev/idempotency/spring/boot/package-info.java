/**
 * Spring Boot auto-configuration of the idempotency library: everything is built from the
 * application's {@code DataSource} and {@code idempotency.*} properties, and each bean gives way to
 * one the application defines itself.
 */
package dev.idempotency.spring.boot;

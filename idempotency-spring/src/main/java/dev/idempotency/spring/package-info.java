/** Runs the idempotent executor inside Spring's transactions ({@link dev.idempotency.spring.SpringCallerTransaction}). */
package dev.idempotency.spring;

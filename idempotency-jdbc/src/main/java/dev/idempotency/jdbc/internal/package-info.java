/**
 * Internal helpers shared by the library's modules. Not API: anything here may change or go away in
 * any release; do not use it from application code.
 */
package dev.idempotency.jdbc.internal;

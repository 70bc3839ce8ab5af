package dev.idempotency.spring.boot.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a controller method whose requests must carry an {@code Idempotency-Key}, whatever their
 * method and path: the starter's filter runs them in the key's transaction as it does requests on
 * {@code idempotency.http.paths}. Without a key they get a 400 problem and the method does not run.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface IdempotentEndpoint {
}

package dev.idempotency.spring.boot.web;

import dev.idempotency.http.IdempotentHttpConfig;

/**
 * Adjusts the HTTP rules' settings after {@code idempotency.http.*} set them, before they are
 * built: a bean of this type (several run in {@code @Order}) adds what the properties cannot say,
 * such as path patterns or a problem type base, without replacing the whole
 * {@link IdempotentHttpConfig} bean.
 *
 * <pre>{@code
 * @Bean
 * IdempotentHttpConfigCustomizer transfers() {
 *     return http -> http.pathPatterns(Pattern.compile("/accounts/[^/]+/transfers"))
 *             .problemTypeBase("https://api.example.com/problems/");
 * }
 * }</pre>
 */
@FunctionalInterface
public interface IdempotentHttpConfigCustomizer {
    void customize(IdempotentHttpConfig.Builder http);
}

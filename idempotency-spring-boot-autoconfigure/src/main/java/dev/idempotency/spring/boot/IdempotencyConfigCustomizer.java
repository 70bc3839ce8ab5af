package dev.idempotency.spring.boot;

import dev.idempotency.core.IdempotencyConfig;

/**
 * Adjusts the executor's settings after {@code idempotency.*} set them, before they are built: a
 * bean of this type (several run in {@code @Order}) changes what the properties cannot say, such as
 * the result types the executor may read back or its {@code ObjectMapper}, without replacing the
 * whole {@link IdempotencyConfig} bean.
 *
 * <pre>{@code
 * @Bean
 * IdempotencyConfigCustomizer paymentResults() {
 *     return config -> config.allowResultTypes(PaymentResponse.class);
 * }
 * }</pre>
 */
@FunctionalInterface
public interface IdempotencyConfigCustomizer {
    void customize(IdempotencyConfig.Builder config);
}

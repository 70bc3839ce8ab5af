package dev.idempotency.spring.boot.actuate;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/**
 * The public API of idempotency-spring-boot-3-starter is the committed
 * api/idempotency-spring-boot-3-starter.api (CONTRIBUTING.md, "API changes").
 */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("idempotency-spring-boot-3-starter");
    }
}

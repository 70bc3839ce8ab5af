package dev.idempotency.spring.boot;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/**
 * The public API of idempotency-spring-boot-autoconfigure is the committed
 * api/idempotency-spring-boot-autoconfigure.api (CONTRIBUTING.md, "API changes").
 */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("idempotency-spring-boot-autoconfigure");
    }
}

package dev.idempotency.jdbc;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/** The public API of idempotency-jdbc is the committed api/idempotency-jdbc.api (CONTRIBUTING.md, "API changes"). */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("idempotency-jdbc");
    }
}

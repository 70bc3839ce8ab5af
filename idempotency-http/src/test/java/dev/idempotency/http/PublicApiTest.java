package dev.idempotency.http;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/** The public API of idempotency-http is the committed api/idempotency-http.api (CONTRIBUTING.md, "API changes"). */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("idempotency-http");
    }
}

package dev.idempotency.db;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/** The public API of idempotency-db is the committed api/idempotency-db.api (CONTRIBUTING.md, "API changes"). */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("idempotency-db");
    }
}

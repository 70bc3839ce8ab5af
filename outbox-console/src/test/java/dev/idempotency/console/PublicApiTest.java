package dev.idempotency.console;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/** The public API of outbox-console is the committed api/outbox-console.api (CONTRIBUTING.md, "API changes"). */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("outbox-console");
    }
}

package dev.idempotency.outbox.cli;

import dev.idempotency.testing.ApiBaseline;
import org.junit.jupiter.api.Test;

/** The public API of outbox-relay-app is the committed api/outbox-relay-app.api (CONTRIBUTING.md, "API changes"). */
class PublicApiTest {
    @Test
    void thePublicApiIsTheCommittedBaseline() {
        ApiBaseline.assertUnchanged("outbox-relay-app");
    }
}

package dev.idempotency.faults;

import dev.idempotency.outbox.OutboxRelayConfig;
import java.time.Duration;

/** Relay settings for fault tests: quick polls and retries, and attempts enough that no outage dead-letters an event. */
final class Relays {
    private Relays() {
    }

    static OutboxRelayConfig fastConfig(String schema) {
        return OutboxRelayConfig.builder().schema(schema).partitions(8)
                .idlePollMax(Duration.ofMillis(100))
                .backoffBase(Duration.ofMillis(50)).backoffMax(Duration.ofSeconds(1))
                .maxAttempts(1000)
                .build();
    }
}

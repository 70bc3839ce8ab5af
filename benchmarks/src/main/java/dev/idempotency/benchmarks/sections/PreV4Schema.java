package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkDatabase;
import dev.idempotency.benchmarks.harness.EarlierSchema;

/**
 * The comparison with the design before migration V4 (issue 13's "today's design"): a second schema,
 * {@code <run's schema>_v3}, migrated only up to V3 (the outbox with a status column the relay
 * updated), with its own payments table. The executor writes into it unchanged (its outbox INSERT
 * fits both shapes) and {@link PreV4RelayDrain} drains it with the pre-V4 relay's statements.
 * Created on first use by {@link BenchmarkDatabase#earlierSchema}, dropped with the run's schema.
 */
final class PreV4Schema {
    /** The last migration of the pre-V4 design. */
    static final String LAST_VERSION = "3";

    private PreV4Schema() {
    }

    /** The run's schema at V3 ({@code <schema>_v3}), created on first use. */
    static EarlierSchema of(BenchmarkDatabase database) {
        return database.earlierSchema(LAST_VERSION, PreV4RelayDrain.TRUNCATE_TABLES);
    }
}

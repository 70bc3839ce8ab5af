package dev.idempotency.benchmarks;

import javax.sql.DataSource;

/**
 * The comparison with the design before migration V4 (issue 13's "today's design"): a second schema,
 * {@code <run's schema>_v3}, migrated only up to V3 (the outbox with a status column the relay
 * updated), with its own payments table. The executor writes into it unchanged (its outbox INSERT
 * fits both shapes) and {@link PreV4RelayDrain} drains it with the pre-V4 relay's statements.
 * Created on first use by {@link BenchmarkDatabase#preV4()}, dropped with the run's schema.
 */
final class PreV4Schema {
    /** The last migration of the pre-V4 design. */
    static final String LAST_VERSION = "3";

    private PreV4Schema() {
    }

    /** Creates {@code schema}, applies the migrations up to V3 only and creates the payments table. */
    static EarlierSchema create(DataSource admin, String schema) {
        return EarlierSchema.create(admin, schema, LAST_VERSION, PreV4RelayDrain.TRUNCATE_TABLES);
    }
}

package dev.idempotency.benchmarks;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

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

    private final String schema;
    private final Jdbi admin;
    private final IdempotencyConfig executorConfig;

    private PreV4Schema(String schema, Jdbi admin) {
        this.schema = schema;
        this.admin = admin;
        this.executorConfig = IdempotencyConfig.builder().schema(schema).build();
    }

    /** Creates {@code schema}, applies the migrations up to V3 only and creates the payments table. */
    static PreV4Schema create(DataSource admin, String schema) {
        Jdbi jdbi = Jdbi.create(admin);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.CREATE_SCHEMA, schema)));
        IdempotencyMigrations.migrate(admin, schema, LAST_VERSION);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkDatabase.resource("pgbench/schema.sql"), schema)));
        return new PreV4Schema(schema, jdbi);
    }

    String schema() {
        return schema;
    }

    /** The executor's configuration on this schema: the library's defaults, as for the run's own schema. */
    IdempotencyConfig executorConfig() {
        return executorConfig;
    }

    /** Empties its tables (a cell's start; the run's {@link BenchmarkDatabase#reset()} checkpoints). */
    void reset() {
        admin.useHandle(h -> h.execute(BenchmarkSql.render(PreV4RelayDrain.TRUNCATE_TABLES, schema)));
    }

    void drop() {
        admin.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.DROP_SCHEMA, schema)));
    }
}

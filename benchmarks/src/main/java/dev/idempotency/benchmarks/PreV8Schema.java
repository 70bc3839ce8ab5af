package dev.idempotency.benchmarks;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

/**
 * The outbox before migration V8, for section 12's comparison: a second schema, {@code <run's schema>_v6},
 * migrated only up to V6, so that only the executor's writes take the ordering key's lock (no trigger,
 * ids from the column's default), with its own payments table. Created on first use by
 * {@link BenchmarkDatabase#preV8()}, emptied with the run's schema and dropped with it.
 */
final class PreV8Schema {
    /** The last migration before the outbox's key-lock trigger (V8). */
    static final String LAST_VERSION = "6";

    private final String schema;
    private final Jdbi admin;
    private final IdempotencyConfig executorConfig;

    private PreV8Schema(String schema, Jdbi admin) {
        this.schema = schema;
        this.admin = admin;
        this.executorConfig = IdempotencyConfig.builder().schema(schema).build();
    }

    /** Creates {@code schema}, applies the migrations up to V6 only and creates the payments table. */
    static PreV8Schema create(DataSource admin, String schema) {
        Jdbi jdbi = Jdbi.create(admin);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.CREATE_SCHEMA, schema)));
        IdempotencyMigrations.migrate(admin, schema, LAST_VERSION);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkDatabase.resource("pgbench/schema.sql"), schema)));
        return new PreV8Schema(schema, jdbi);
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
        admin.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.TRUNCATE_TABLES, schema)));
    }

    void drop() {
        admin.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.DROP_SCHEMA, schema)));
    }
}

package dev.idempotency.benchmarks.harness;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

/**
 * A comparison schema of the run: a second schema migrated only up to an earlier version, with its own
 * payments table, for rows that measure a design beside the one before it (the outbox before V8's
 * key-lock trigger, say), from {@link BenchmarkDatabase#earlierSchema}. Emptied with the
 * run's schema before each cell and dropped with it.
 */
public final class EarlierSchema {
    private final String schema;
    private final Jdbi admin;
    private final String truncateTables;
    private final IdempotencyConfig executorConfig;

    private EarlierSchema(String schema, Jdbi admin, String truncateTables) {
        this.schema = schema;
        this.admin = admin;
        this.truncateTables = truncateTables;
        this.executorConfig = IdempotencyConfig.builder().schema(schema).build();
    }

    /**
     * Creates {@code schema}, applies the migrations up to {@code lastVersion} only and creates the
     * payments table; {@code truncateTables} (with {@code <schema>}) empties it.
     */
    public static EarlierSchema create(DataSource admin, String schema, String lastVersion, String truncateTables) {
        Jdbi jdbi = Jdbi.create(admin);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.CREATE_SCHEMA, schema)));
        IdempotencyMigrations.migrate(admin, schema, lastVersion);
        jdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkDatabase.resource("pgbench/schema.sql"), schema)));
        return new EarlierSchema(schema, jdbi, truncateTables);
    }

    public String schema() {
        return schema;
    }

    /** The executor's configuration on this schema: the library's defaults, as for the run's own schema. */
    public IdempotencyConfig executorConfig() {
        return executorConfig;
    }

    /** Empties its tables (a cell's start; the run's {@link BenchmarkDatabase#reset()} checkpoints). */
    public void reset() {
        admin.useHandle(h -> h.execute(BenchmarkSql.render(truncateTables, schema)));
    }

    public void drop() {
        admin.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.DROP_SCHEMA, schema)));
    }
}

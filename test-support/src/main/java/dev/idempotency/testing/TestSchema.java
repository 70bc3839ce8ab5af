package dev.idempotency.testing;

import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;

/**
 * A schema that belongs to one test class, with a pool set to it; {@link #close()} drops it, so a
 * suite can run again, in any order, in parallel, on the same server.
 */
public final class TestSchema implements AutoCloseable {
    private final TestDatabase database;
    private final String name;
    private final HikariDataSource dataSource;

    TestSchema(TestDatabase database, String name, HikariDataSource dataSource) {
        this.database = database;
        this.name = name;
        this.dataSource = dataSource;
    }

    /** The schema's name: a lower-case identifier, safe to use unquoted. */
    public String name() {
        return name;
    }

    /** A pool whose connections have this schema as their search path. */
    public DataSource dataSource() {
        return dataSource;
    }

    /** Another pool on the same schema, e.g. for a second process in a test; the caller closes it. */
    public HikariDataSource newPool(int size) {
        return database.pool(name, size);
    }

    /** Runs one statement on a fresh connection outside the pool. */
    public void execute(String sql) {
        database.execute("SET search_path TO \"" + name + "\"; " + sql);
    }

    @Override
    public void close() {
        dataSource.close();
        database.execute("DROP SCHEMA IF EXISTS \"" + name + "\" CASCADE");
    }
}

package dev.idempotency.testing;

import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension giving a test class a schema of its own on the {@link TestDatabase}, brought to
 * the state its tests need by a {@link Migration} the module passes in, with a HikariCP pool set to
 * it; afterwards the pool is closed and the schema dropped.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();
 * }</pre>
 *
 * <p>On a {@code static} field the schema lives for the class; on an instance field, for each test.
 * Outside JUnit (several schemas in one test) {@link #start()} and {@link #close()} it by hand.
 * The migration is a parameter because this module is built before the migrations' module, whose
 * own tests use it.
 */
public final class MigratedSchema implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
        AfterEachCallback, AutoCloseable {

    /** Brings an empty schema to the state the tests need, e.g. {@code IdempotencyMigrations::migrate}. */
    @FunctionalInterface
    public interface Migration {
        /** Leaves the schema as it is: for tests of what happens on a schema nobody migrated. */
        Migration NONE = (dataSource, schema) -> { };

        void apply(DataSource dataSource, String schema) throws Exception;
    }

    private final Migration migration;
    private final String prefix;
    private final int poolSize;
    private final List<String> afterMigration;
    private final TestDatabase server;

    private TestSchema schema;
    private boolean perTest;

    private MigratedSchema(Builder builder) {
        this.migration = builder.migration;
        this.prefix = builder.prefix;
        this.poolSize = builder.poolSize;
        this.afterMigration = List.copyOf(builder.afterMigration);
        this.server = builder.server;
    }

    /** A schema that {@code migration} prepares; settings on the builder. */
    public static Builder builder(Migration migration) {
        return new Builder(Objects.requireNonNull(migration, "migration"));
    }

    /** Settings of a {@link MigratedSchema}; every one optional. */
    public static final class Builder {
        private final Migration migration;
        private String prefix;
        private int poolSize = 4;
        private final List<String> afterMigration = new ArrayList<>();
        private TestDatabase server;

        private Builder(Migration migration) {
            this.migration = migration;
        }

        /** Start of the schema's name; by default the test class's name. */
        public Builder prefix(String prefix) {
            this.prefix = Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        /** Size of the pool {@link #dataSource()} returns; 4 by default. */
        public Builder poolSize(int poolSize) {
            if (poolSize < 1) {
                throw new IllegalArgumentException("poolSize must be at least 1, got " + poolSize);
            }
            this.poolSize = poolSize;
            return this;
        }

        /** SQL run in the schema after the migration, e.g. the business tables the tests write. */
        public Builder afterMigration(String sql) {
            afterMigration.add(Objects.requireNonNull(sql, "sql"));
            return this;
        }

        /** A server other than the shared {@link TestDatabase#get()}, e.g. a test's private one. */
        public Builder server(TestDatabase server) {
            this.server = Objects.requireNonNull(server, "server");
            return this;
        }

        public MigratedSchema build() {
            return new MigratedSchema(this);
        }
    }

    /** Creates and migrates the schema now; for use outside JUnit's lifecycle. Returns this. */
    public MigratedSchema start() {
        return start(prefix == null ? "test" : prefix);
    }

    private MigratedSchema start(String namePrefix) {
        if (schema != null) {
            throw new IllegalStateException("schema " + schema.name() + " is already started");
        }
        TestDatabase database = server == null ? TestDatabase.get() : server;
        TestSchema created = database.newSchema(namePrefix, poolSize);
        try {
            migration.apply(created.dataSource(), created.name());
            afterMigration.forEach(created::execute);
        } catch (Exception | AssertionError e) {
            created.close();
            throw new IllegalStateException("could not prepare test schema " + created.name() + ": " + e, e);
        }
        schema = created;
        return this;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        start(prefixFor(context));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        if (schema == null) {
            perTest = true;
            start(prefixFor(context));
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (perTest) {
            close();
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    private String prefixFor(ExtensionContext context) {
        return prefix != null ? prefix : context.getRequiredTestClass().getSimpleName();
    }

    /** The schema's name: a lower-case identifier, safe to use unquoted. */
    public String name() {
        return started().name();
    }

    /** The pool whose connections have this schema as their search path. */
    public DataSource dataSource() {
        return started().dataSource();
    }

    /** Another pool on the same schema, e.g. for a second process in a test; the caller closes it. */
    public HikariDataSource newPool(int size) {
        return started().newPool(size);
    }

    /** Runs one statement (or several, separated by semicolons) in the schema, outside the pool. */
    public void execute(String sql) {
        started().execute(sql);
    }

    private TestSchema started() {
        if (schema == null) {
            throw new IllegalStateException("the test schema is not started: register this MigratedSchema with "
                    + "@RegisterExtension, or call start()");
        }
        return schema;
    }

    /** Closes the pool and drops the schema; does nothing when it is not started. */
    @Override
    public void close() {
        TestSchema current = schema;
        schema = null;
        if (current != null) {
            current.close();
        }
    }
}

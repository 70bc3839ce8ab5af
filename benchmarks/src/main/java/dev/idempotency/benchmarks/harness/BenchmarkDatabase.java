package dev.idempotency.benchmarks.harness;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.db.IdempotencyMigrations;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run's own schema {@code idempotency_bench_<random>} on the benchmarked server: the library's
 * migrations plus the payments table, emptied before every cell and dropped at {@link #close()}.
 * Hands out pools sized to a cell's callers and the libpq settings pgbench connects with.
 */
public final class BenchmarkDatabase implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(BenchmarkDatabase.class);

    private final BenchmarkSettings settings;
    private final String schema;
    private final HikariDataSource admin;
    private final Jdbi adminJdbi;
    private final AtomicBoolean closed = new AtomicBoolean();
    private boolean checkpointAllowed = true;
    /** The comparison schemas created so far, by their last migration version. */
    private final Map<String, EarlierSchema> earlier = new LinkedHashMap<>();

    private BenchmarkDatabase(BenchmarkSettings settings, String schema, HikariDataSource admin) {
        this.settings = settings;
        this.schema = schema;
        this.admin = admin;
        this.adminJdbi = Jdbi.create(admin);
    }

    /** Creates the schema, applies the migrations and creates the payments table. */
    public static BenchmarkDatabase create(BenchmarkSettings settings) {
        String schema = "idempotency_bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        HikariDataSource admin = newPool(settings, settings.jdbcUrl(), "bench-admin", 2);
        BenchmarkDatabase database = new BenchmarkDatabase(settings, schema, admin);
        try {
            database.adminJdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.CREATE_SCHEMA, schema)));
            IdempotencyMigrations.migrate(admin, schema);
            database.adminJdbi.useHandle(h -> h.execute(BenchmarkSql.render(resource("pgbench/schema.sql"), schema)));
            return database;
        } catch (RuntimeException e) {
            database.close();
            throw e;
        }
    }

    /** The schema holding the library's tables and the payments table. */
    public String schema() {
        return schema;
    }

    /**
     * The comparison schema {@code <schema>_v<lastVersion>}, migrated up to {@code lastVersion} only, created
     * on first use; {@code truncateTables} empties it at {@link #reset()}, and {@link #close()} drops it with
     * the run's schema. A section names the design it compares with (the outbox before V8's key-lock
     * trigger, say) by its last version.
     */
    public synchronized EarlierSchema earlierSchema(String lastVersion, String truncateTables) {
        return earlier.computeIfAbsent(lastVersion,
                version -> EarlierSchema.create(admin, schema + "_v" + version, version, truncateTables));
    }

    /** A pool of exactly {@code size} connections, opened before it is handed out; the caller closes it. */
    public HikariDataSource pool(String name, int size) {
        return newPool(settings, settings.jdbcUrl(), name, size);
    }

    /** {@link #pool(String, int)} on another URL to the same database (through a pooler, say), with the run's credentials. */
    public HikariDataSource pool(String jdbcUrl, String name, int size) {
        return newPool(settings, jdbcUrl, name, size);
    }

    private static HikariDataSource newPool(BenchmarkSettings settings, String jdbcUrl, String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        if (settings.dbUser() != null) {
            config.setUsername(settings.dbUser());
        }
        if (settings.dbPassword() != null) {
            config.setPassword(settings.dbPassword());
        }
        config.setPoolName(name);
        // Its connections show up under the pool's name in pg_stat_activity (the relay's CPU share is found so).
        config.addDataSourceProperty("ApplicationName", name);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setConnectionTimeout(30_000);
        return new HikariDataSource(config);
    }

    /** Empties the tables and checkpoints, so that each cell starts from the same state. */
    public void reset() {
        adminJdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.TRUNCATE_TABLES, schema)));
        synchronized (this) {
            earlier.values().forEach(EarlierSchema::reset);
        }
        if (checkpointAllowed) {
            try {
                adminJdbi.useHandle(h -> h.execute(BenchmarkSql.CHECKPOINT));
            } catch (RuntimeException e) {
                checkpointAllowed = false;
                log.warn("CHECKPOINT before each cell is not allowed for this user; cells may pay for each other's "
                        + "checkpoints: {}", e.getMessage());
            }
        }
    }

    /** Version and durability settings of the server, by name. */
    Map<String, String> serverFacts() {
        return adminJdbi.withHandle(h -> {
            Map<String, String> facts = new LinkedHashMap<>();
            h.createQuery(BenchmarkSql.SERVER_FACTS).mapToMap().one()
                    .forEach((name, value) -> facts.put(name, String.valueOf(value)));
            return facts;
        });
    }

    /** Client connections the server accepts right now beyond those in use. */
    public int freeConnections() {
        return adminJdbi.withHandle(h -> h.createQuery(BenchmarkSql.FREE_CONNECTIONS).mapTo(Integer.class).one());
    }

    /** PGHOST, PGPORT, PGDATABASE, PGUSER and PGPASSWORD for a libpq program, from the JDBC URL and the options. */
    public Map<String, String> libpqEnvironment() {
        return libpqEnvironment(settings.jdbcUrl());
    }

    /** {@link #libpqEnvironment()} for another URL to the same database, with the run's credentials. */
    public Map<String, String> libpqEnvironment(String jdbcUrl) {
        Properties parsed = org.postgresql.Driver.parseURL(jdbcUrl, new Properties());
        if (parsed == null) {
            throw new IllegalArgumentException("jdbcUrl is not a URL the PostgreSQL driver accepts: " + jdbcUrl);
        }
        Map<String, String> environment = new LinkedHashMap<>();
        // A URL may list several hosts for failover; pgbench measures against the first.
        environment.put("PGHOST", parsed.getProperty("PGHOST", "localhost").split(",")[0]);
        environment.put("PGPORT", parsed.getProperty("PGPORT", "5432").split(",")[0]);
        environment.put("PGDATABASE", parsed.getProperty("PGDBNAME", ""));
        String user = settings.dbUser() != null ? settings.dbUser() : parsed.getProperty("user");
        if (user != null) {
            environment.put("PGUSER", user);
        }
        String password = settings.dbPassword() != null ? settings.dbPassword() : parsed.getProperty("password");
        if (password != null) {
            environment.put("PGPASSWORD", password);
        }
        return environment;
    }

    /** A text resource of this module, such as a pgbench script. */
    static String resource(String path) {
        try (InputStream in = BenchmarkDatabase.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("resource " + path + " is missing from the benchmark jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Drops the schema and closes the admin pool; once, however often it is called. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            synchronized (this) {
                earlier.values().forEach(EarlierSchema::drop);
            }
            adminJdbi.useHandle(h -> h.execute(BenchmarkSql.render(BenchmarkSql.DROP_SCHEMA, schema)));
        } catch (RuntimeException e) {
            log.warn("could not drop the benchmark schema {}; drop it by hand: {}", schema, e.getMessage());
        } finally {
            admin.close();
        }
    }
}

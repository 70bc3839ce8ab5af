package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.testing.MigratedSchema;
import dev.idempotency.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.output.MigrateResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

class IdempotencyMigrationsTest {
    /** Every table and view the migrations create, with Flyway's history; the outbox is split into three generations. */
    private static final List<String> ALL_TABLES = List.of("idempotency_keys", "idempotency_schema_history",
            "outbox_event_states", "outbox_events", "outbox_events_0", "outbox_events_1", "outbox_events_2",
            "outbox_generation", "outbox_relay_instances", "outbox_relay_partitions", "outbox_relay_positions",
            "outbox_relay_server", "outbox_relay_stats", "outbox_retries", "sweeper_runs");

    /** An empty schema for each test: the tests migrate it themselves. */
    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("migrations").poolSize(2).build();

    @Test
    void createsTheKeysAndOutboxTablesInTheNamedSchema() throws SQLException {
        MigrateResult result = IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(12, result.migrationsExecuted, "V1 to V12");
        assertEquals(ALL_TABLES, tables());
    }

    @Test
    void theOutboxAndItsRetriesHaveNullableTraceContextColumnsAndRowsWithoutThemStayValid() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(List.of("outbox_events.traceparent YES", "outbox_events.tracestate YES",
                        "outbox_events_0.traceparent YES", "outbox_events_0.tracestate YES",
                        "outbox_events_1.traceparent YES", "outbox_events_1.tracestate YES",
                        "outbox_events_2.traceparent YES", "outbox_events_2.tracestate YES",
                        "outbox_retries.traceparent YES", "outbox_retries.tracestate YES"),
                FirstColumn.of(schema.dataSource(), "SELECT table_name || '.' || column_name || ' ' || is_nullable"
                        + " FROM information_schema.columns WHERE table_schema = current_schema()"
                        + " AND column_name IN ('traceparent', 'tracestate') ORDER BY 1"));
        execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'p1', '{}')");
        assertEquals(1, count("SELECT count(*) FROM outbox_events WHERE traceparent IS NULL AND tracestate IS NULL"));
    }

    @Test
    void relayStatisticsFallInTenSecondBucketsOfTheDatabaseClockWithFixedLatencyBounds() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(List.of("2026-03-01 10:00:20+00"), FirstColumn.of(schema.dataSource(),
                "SELECT outbox_relay_stats_bucket(timestamptz '2026-03-01 10:00:29.999+00') AT TIME ZONE 'UTC' || '+00'"));
        assertEquals(List.of("{5,10,25,50,100,250,500,1000,2500,5000,10000,30000,60000,300000}"),
                FirstColumn.of(schema.dataSource(), "SELECT outbox_relay_latency_bounds()::text"));
    }

    @Test
    void keyRowsInsertedWhileABatchsClaimsAreOpenCommitOnlyOnceSealedAndOtherInsertsAsBefore() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        String insertCompleted = "INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, expires_at) "
                + "VALUES ('t1', '%s', 'completed', 'true', now() + interval '1 hour')";

        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SELECT set_config('idempotency.batch_claims', 'open', true)");
            s.execute(insertCompleted.formatted("unsealed"));
            SQLException refused = assertThrows(SQLException.class, c::commit);
            assertEquals("IH002", refused.getSQLState(), refused.getMessage());

            s.execute("SELECT set_config('idempotency.batch_claims', 'open', true)");
            s.execute(insertCompleted.formatted("sealed"));
            s.execute("SELECT set_config('idempotency.batch_claims', 'sealed', true)");
            c.commit();

            s.execute(insertCompleted.formatted("unmarked")); // the executor's, a restore's: no mark, no check
            c.commit();
        }

        assertEquals(List.of("sealed", "unmarked"), FirstColumn.of(schema.dataSource(),
                "SELECT idempotency_key::text FROM idempotency_keys ORDER BY 1"));
    }

    @Test
    void applyingTwiceIsANoOp() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
        insertKey("t1", "k1");

        MigrateResult second = IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(0, second.migrationsExecuted);
        assertEquals(1, count("SELECT count(*) FROM idempotency_keys"));
    }

    @Test
    @Timeout(30)
    void migratesThroughAPoolOfOneConnectionWithoutWaitingForASecond() throws SQLException {
        try (HikariDataSource pool = poolOfOne()) {
            // A second connection would be refused after 250 ms, failing the migration.
            MigrateResult first = IdempotencyMigrations.migrate(pool, schema.name());
            MigrateResult second = IdempotencyMigrations.migrate(pool, schema.name());

            assertTrue(first.migrationsExecuted >= 2, "migrations executed: " + first.migrationsExecuted);
            assertEquals(0, second.migrationsExecuted);
        }
        assertEquals(ALL_TABLES, tables());
    }

    @Test
    @Timeout(30)
    void completesASchemaThatAnEarlierMigrateLeftWithAnEmptyHistoryTable() throws SQLException {
        try (HikariDataSource pool = poolOfOne()) {
            // What releases before the fix left behind: Flyway's default two-connection lock on a pool of one.
            assertThrows(FlywayException.class, () -> Flyway.configure(IdempotencyMigrations.class.getClassLoader())
                    .dataSource(pool).locations(IdempotencyMigrations.LOCATION).schemas(schema.name())
                    .defaultSchema(schema.name()).table(IdempotencyMigrations.HISTORY_TABLE)
                    .baselineOnMigrate(true).baselineVersion("0").load().migrate());
            assertEquals(List.of("idempotency_schema_history"), tables());

            MigrateResult result = IdempotencyMigrations.migrate(pool, schema.name());

            assertTrue(result.migrationsExecuted >= 2, "migrations executed: " + result.migrationsExecuted);
        }
        assertEquals(ALL_TABLES, tables());
    }

    @Test
    void leavesTheUsersOwnTablesInTheSameSchemaAlone() throws SQLException {
        schema.execute("CREATE TABLE payments (id int PRIMARY KEY, amount int); INSERT INTO payments VALUES (1, 100)");

        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(1, count("SELECT count(*) FROM payments WHERE amount = 100"));
        assertTrue(tables().containsAll(List.of("payments", "idempotency_keys", "outbox_events")));
    }

    @Test
    void refusesASchemaNameThatIsNotAPlainIdentifier() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> IdempotencyMigrations.migrate(schema.dataSource(), "x\"; DROP TABLE y; --"));
        assertTrue(e.getMessage().startsWith("schema must be"), e.getMessage());
    }

    @Test
    void theSchemaRefusesBlankKeysAndUnknownStatuses() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertThrows(SQLException.class, () -> insertKey("t1", "   "));
        assertThrows(SQLException.class, () -> insertKey("t1", "bad\u0001key"));
        assertThrows(SQLException.class, () -> execute(
                "INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, expires_at) VALUES ('t', 'k', 'done', now())"));
        assertThrows(SQLException.class, () -> execute(
                "INSERT INTO outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t', '', 'p', '{}')"));
        assertEquals(0, count("SELECT count(*) FROM idempotency_keys"));
    }

    /** A pool of exactly one connection that gives up on a second within 250 ms, as a small CLI pool would. */
    private static HikariDataSource poolOfOne() {
        TestDatabase database = TestDatabase.get();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(database.url());
        if (database.user() != null) {
            config.setUsername(database.user());
        }
        if (database.password() != null) {
            config.setPassword(database.password());
        }
        config.setMaximumPoolSize(1);
        config.setConnectionTimeout(250);
        config.setPoolName("migrate-pool-of-one");
        return new HikariDataSource(config);
    }

    private void insertKey(String tenant, String key) throws SQLException {
        try (Connection c = schema.dataSource().getConnection();
             var ps = c.prepareStatement("INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, expires_at) "
                     + "VALUES (?, ?, 'processing', now() + interval '1 hour')")) {
            ps.setString(1, tenant);
            ps.setString(2, key);
            ps.executeUpdate();
        }
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private long count(String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The tables of the test's schema, which its connections have as their current schema. */
    private List<String> tables() throws SQLException {
        return FirstColumn.of(schema.dataSource(),
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1");
    }
}

package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A static field gives the class one prepared schema, an instance field a fresh one per test, and
 * each is dropped when its scope ends; a failed migration leaves no schema behind.
 */
@Timeout(60)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MigratedSchemaTest {
    /** Stands in for a module's migration: one table, made with the pool the extension passes. */
    private static final MigratedSchema.Migration CREATE_MARKER = (dataSource, schema) -> {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + schema + ".marker (n int NOT NULL)");
        }
    };

    @RegisterExtension
    static final MigratedSchema perClass = MigratedSchema.builder(CREATE_MARKER).afterMigration("INSERT INTO marker VALUES (1)").build();
    @RegisterExtension
    final MigratedSchema perTest = MigratedSchema.builder(CREATE_MARKER).poolSize(1).build();

    private static final List<String> classNames = new ArrayList<>();
    private static final List<String> testNames = new ArrayList<>();

    @Test
    @Order(1)
    void theSchemasAreMigratedAndThePoolsUseThemAsSearchPath() throws SQLException {
        classNames.add(perClass.name());
        testNames.add(perTest.name());

        assertEquals(1, count(perClass.dataSource(), "SELECT count(*) FROM marker"));
        assertEquals(0, count(perTest.dataSource(), "SELECT count(*) FROM marker"));
        assertTrue(perClass.name().startsWith("migratedschematest_"), perClass.name());
    }

    @Test
    @Order(2)
    void aStaticFieldKeepsOneSchemaForTheClassAndAnInstanceFieldDropsItsSchemaAfterEachTest() throws SQLException {
        classNames.add(perClass.name());
        testNames.add(perTest.name());

        assertEquals(classNames.get(0), classNames.get(1));
        assertNotEquals(testNames.get(0), testNames.get(1));
        assertFalse(exists(testNames.get(0)), "the first test's schema is dropped");
        assertTrue(exists(testNames.get(1)));
    }

    @Test
    void closeClosesThePoolAndDropsTheSchema() throws SQLException {
        MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("by_hand").build().start();
        String name = schema.name();
        assertTrue(exists(name));

        schema.close();

        assertFalse(exists(name));
        IllegalStateException e = assertThrows(IllegalStateException.class, schema::name);
        assertTrue(e.getMessage().contains("@RegisterExtension, or call start()"), e.getMessage());
    }

    @Test
    void aFailingMigrationLeavesNoSchemaAndNamesTheOneItTried() throws SQLException {
        String prefix = "failing_" + UUID.randomUUID().toString().substring(0, 8);
        MigratedSchema schema = MigratedSchema.builder((dataSource, name) -> {
            throw new SQLException("migration refused");
        }).prefix(prefix).build();

        IllegalStateException e = assertThrows(IllegalStateException.class, schema::start);

        assertTrue(e.getMessage().startsWith("could not prepare test schema " + prefix + "_"), e.getMessage());
        assertTrue(e.getMessage().contains("migration refused"), e.getMessage());
        assertEquals(0, count(null, "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE '" + prefix + "%'"));
    }

    private static boolean exists(String schema) throws SQLException {
        try (Connection c = TestDatabase.get().connect();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) == 1;
            }
        }
    }

    private static long count(DataSource dataSource, String sql) throws SQLException {
        try (Connection c = dataSource == null ? TestDatabase.get().connect() : dataSource.getConnection();
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}

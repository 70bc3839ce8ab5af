package dev.idempotency.db;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** Reads a query's first column as text, for the migration tests' assertions on rows and the catalog. */
final class FirstColumn {
    private FirstColumn() {
    }

    static List<String> of(DataSource dataSource, String sql) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            return of(s, sql);
        }
    }

    /** On {@code statement}'s session, for a test whose session settings matter. */
    static List<String> of(Statement statement, String sql) throws SQLException {
        try (ResultSet rs = statement.executeQuery(sql)) {
            List<String> values = new ArrayList<>();
            while (rs.next()) {
                values.add(rs.getString(1));
            }
            return values;
        }
    }
}

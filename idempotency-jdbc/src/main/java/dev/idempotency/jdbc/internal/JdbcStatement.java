package dev.idempotency.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.postgresql.PGStatement;

/**
 * A statement of the executor's ({@code ExecutorSql}) or of the relay's publish path ({@code RelaySql}),
 * run on plain JDBC: its {@code :name} parameters are turned into positions once, so a call binds by
 * index instead of through Jdbi's argument machinery (which profiled at most of the executor's client
 * CPU, and a quarter of a relay worker's), and no Jdbi configuration (the caller's template engine,
 * SQL parser, customizers) ever rewrites it. The SQL text a reader sees is unchanged; pgjdbc still
 * prepares it server-side after a few uses.
 *
 * <p>The parser is deliberately small: a {@code :name} is a colon followed by a letter, not
 * preceded by another colon ({@code ::type} casts stay). It does not skip string literals or
 * comments, so no statement run through it holds a colon inside either ({@code JdbcStatementTest},
 * {@code RelayJdbcStatementsTest}).
 */
public final class JdbcStatement {
    /** A {@code :name} parameter; {@code ::type} casts are not parameters. */
    private static final Pattern PARAMETER = Pattern.compile("(?<!:):([a-zA-Z][a-zA-Z0-9_]*)");

    private final String namedSql;
    private final String sql;
    private final Map<String, int[]> positions;

    private JdbcStatement(String namedSql, String sql, Map<String, int[]> positions) {
        this.namedSql = namedSql;
        this.sql = sql;
        this.positions = positions;
    }

    /** Parses {@code namedSql} once. */
    public static JdbcStatement of(String namedSql) {
        Matcher matcher = PARAMETER.matcher(namedSql);
        Map<String, List<Integer>> found = new HashMap<>();
        StringBuilder positional = new StringBuilder();
        int position = 0;
        while (matcher.find()) {
            found.computeIfAbsent(matcher.group(1), name -> new ArrayList<>()).add(++position);
            matcher.appendReplacement(positional, "?");
        }
        matcher.appendTail(positional);
        Map<String, int[]> positions = new HashMap<>();
        found.forEach((name, list) -> positions.put(name, list.stream().mapToInt(Integer::intValue).toArray()));
        return new JdbcStatement(namedSql, positional.toString(), Map.copyOf(positions));
    }

    /** A statement being bound and run on one connection. */
    public final class Call implements AutoCloseable {
        private final PreparedStatement statement;

        private Call(Connection connection) throws SQLException {
            this.statement = connection.prepareStatement(sql);
        }

        public Call text(String name, String value) throws SQLException {
            for (int index : at(name)) {
                statement.setString(index, value);
            }
            return this;
        }

        public Call bytes(String name, byte[] value) throws SQLException {
            for (int index : at(name)) {
                statement.setBytes(index, value);
            }
            return this;
        }

        /** Binds a {@code bigint}, or NULL. */
        public Call bigint(String name, Long value) throws SQLException {
            return typed(name, value, Types.BIGINT);
        }

        public Call integer(String name, int value) throws SQLException {
            for (int index : at(name)) {
                statement.setInt(index, value);
            }
            return this;
        }

        /** Binds a {@code double precision}, or NULL. */
        public Call number(String name, Double value) throws SQLException {
            return typed(name, value, Types.DOUBLE);
        }

        /**
         * Binds a {@code text[]}. pgjdbc encodes a {@code String[]} passed to setObject as text[] itself;
         * createArrayOf would look the type up and build a PgArray first, per array and per call.
         */
        public Call textArray(String name, List<String> values) throws SQLException {
            return array(name, values.toArray(new String[0]));
        }

        /** Binds a {@code bigint[]}; null elements stay NULL (pgjdbc encodes a {@code Long[]} as int8[] itself). */
        public Call bigintArray(String name, List<Long> values) throws SQLException {
            return array(name, values.toArray(new Long[0]));
        }

        /** Binds an {@code int[]}; null elements stay NULL (pgjdbc encodes an {@code Integer[]} as int4[] itself). */
        public Call integerArray(String name, List<Integer> values) throws SQLException {
            return array(name, values.toArray(new Integer[0]));
        }

        private Call array(String name, Object[] array) throws SQLException {
            for (int index : at(name)) {
                statement.setObject(index, array);
            }
            return this;
        }

        /** Binds a {@code uuid}, or NULL. */
        public Call uuid(String name, UUID value) throws SQLException {
            return typed(name, value, Types.OTHER);
        }

        /** Binds {@code value} as {@code sqlType}; pgjdbc sends a null as NULL of that type, and a value through its own setter. */
        private Call typed(String name, Object value, int sqlType) throws SQLException {
            for (int index : at(name)) {
                statement.setObject(index, value, sqlType);
            }
            return this;
        }

        /**
         * Sends the statement unnamed, so PostgreSQL plans it at this call with the tables' sizes of this
         * moment instead of using a plan it cached when they were other (pgjdbc's prepare threshold 0).
         */
        public Call plannedAtEachCall() throws SQLException {
            statement.unwrap(PGStatement.class).setPrepareThreshold(0);
            return this;
        }

        /** Cancels the statement on the server if it runs longer than {@code seconds} (JDBC's query timeout). */
        public Call timeout(int seconds) throws SQLException {
            statement.setQueryTimeout(seconds);
            return this;
        }

        /**
         * Runs statements sent in one execution (separated by {@code ;}); returns the rows of the first
         * that returns any (statements without rows before it, such as a savepoint, are skipped), to
         * be read before {@link #nextRows()}.
         */
        public ResultSet executeAll() throws SQLException {
            ResultSet rows = statement.execute() ? statement.getResultSet() : nextRows();
            if (rows == null) {
                throw new SQLException("none of the statements returned rows: " + sql);
            }
            return rows;
        }

        /** After {@link #executeAll()}: the next statement's rows, skipping results without any; null when none is left. */
        public ResultSet nextRows() throws SQLException {
            while (true) {
                if (statement.getMoreResults()) {
                    return statement.getResultSet();
                }
                if (statement.getUpdateCount() == -1) {
                    return null;
                }
            }
        }

        /** Runs a statement that changes rows; returns how many. */
        public int update() throws SQLException {
            return statement.executeUpdate();
        }

        private int[] at(String name) {
            int[] indexes = positions.get(name);
            if (indexes == null) {
                throw new IllegalArgumentException("no parameter :" + name + " in " + sql);
            }
            return indexes;
        }

        @Override
        public void close() throws SQLException {
            statement.close();
        }
    }

    /** Binds a call's parameters. */
    @FunctionalInterface
    public interface Binding {
        void bind(Call call) throws SQLException;
    }

    /** Reads one row. */
    @FunctionalInterface
    public interface RowReader<R> {
        R read(ResultSet row) throws SQLException;
    }

    /** Runs this statement on {@code connection}; returns the rows changed. */
    public int update(Connection connection, Binding binding) {
        try (Call call = on(connection)) {
            binding.bind(call);
            return call.update();
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /**
     * Runs this statement, or the statements it holds ({@code ;}-separated, sent with one Sync), on
     * {@code connection} for their effect; their results are not read, so each must check itself in
     * SQL what it needs (a failing statement fails the call, and PostgreSQL skips those after it).
     */
    public void execute(Connection connection, Binding binding) {
        try (Call call = on(connection)) {
            binding.bind(call);
            call.statement.execute();
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /** Runs this query on {@code connection}; returns its first row, read by {@code reader}, if any. */
    public <R> Optional<R> queryFirst(Connection connection, Binding binding, RowReader<R> reader) {
        try (Call call = on(connection)) {
            binding.bind(call);
            try (ResultSet rows = call.statement.executeQuery()) {
                return rows.next() ? Optional.ofNullable(reader.read(rows)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /** The SQL as written, with {@code :name} parameters, to build a longer statement from. */
    public String namedSql() {
        return namedSql;
    }

    /** The SQL sent to the driver, with {@code ?} for each parameter. */
    public String positionalSql() {
        return sql;
    }

    /** The positions, from 1, at which {@code name} is bound; empty for a name the statement lacks. */
    public int[] positionsOf(String name) {
        return positions.getOrDefault(name, new int[0]).clone();
    }

    /** Prepares this statement on {@code connection}; close the call when done. */
    public Call on(Connection connection) throws SQLException {
        return new Call(connection);
    }

    /**
     * Runs {@code command}, a statement without parameters, as a one-shot unnamed statement: parsed
     * by the backend that holds the transaction, never a named one a pooler could mix up with another
     * client's (see the executor's {@code PgTransactions}).
     */
    public static void executeUnnamed(Connection connection, String command) {
        try (Statement statement = connection.createStatement()) {
            if (statement.isWrapperFor(PGStatement.class)) {
                statement.unwrap(PGStatement.class).setPrepareThreshold(0);
            }
            statement.execute(command);
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    /** A JDBC failure as the same exception type Jdbi statements throw, without the values it bound. */
    public static RuntimeException failure(SQLException e) {
        return RedactedErrors.redact(new UnableToExecuteStatementException(e, null));
    }
}

package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.internal.JdbcStatement;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The {@code :name} parser of the executor's statements, and binding by name on a real connection. */
class JdbcStatementTest {

    @Test
    void aNamedParameterBecomesAPositionalOne() {
        JdbcStatement statement = JdbcStatement.of("SELECT * FROM t WHERE a = :first AND b = :second_2");

        assertEquals("SELECT * FROM t WHERE a = ? AND b = ?", statement.positionalSql());
        assertArrayEquals(new int[] {1}, statement.positionsOf("first"));
        assertArrayEquals(new int[] {2}, statement.positionsOf("second_2"));
    }

    @Test
    void aCastWithTwoColonsIsNotAParameter() {
        JdbcStatement statement = JdbcStatement.of("SELECT :payload::jsonb, CAST(:n AS int)::text");

        assertEquals("SELECT ?::jsonb, CAST(? AS int)::text", statement.positionalSql());
        assertArrayEquals(new int[] {1}, statement.positionsOf("payload"));
        assertArrayEquals(new int[0], statement.positionsOf("jsonb"));
        assertArrayEquals(new int[0], statement.positionsOf("text"));
    }

    @Test
    void aRepeatedNameIsBoundAtEveryPosition() {
        JdbcStatement statement = JdbcStatement.of("SELECT :a, :b, :a");

        assertEquals("SELECT ?, ?, ?", statement.positionalSql());
        assertArrayEquals(new int[] {1, 3}, statement.positionsOf("a"));
        assertArrayEquals(new int[] {2}, statement.positionsOf("b"));
    }

    @Test
    void aColonDigitOrAColonAloneIsNotAParameter() {
        JdbcStatement statement = JdbcStatement.of("SELECT '10:30', arr[1:2], : x");

        assertEquals("SELECT '10:30', arr[1:2], : x", statement.positionalSql());
    }

    /** The parser does not skip string literals (see its comment); this is why no statement of ours may hold one. */
    @Test
    void aNameInsideAStringLiteralIsTakenForAParameter() {
        assertEquals("SELECT '?'", JdbcStatement.of("SELECT ':name'").positionalSql());
    }

    @Test
    void noExecutorStatementHoldsAParameterInsideAStringLiteralOrComment() throws Exception {
        List<String> statements = new ArrayList<>();
        collectStatements(new ExecutorSql("some_schema"), statements);
        collectStatements(new ExecutorSql.BatchStatements("some_schema"), statements);
        assertTrue(statements.size() >= 40, "found " + statements.size() + " statements");
        Pattern literalOrComment = Pattern.compile("'[^']*'|--[^\\n]*|/\\*.*?\\*/", Pattern.DOTALL);
        for (String statement : statements) {
            Matcher matcher = literalOrComment.matcher(statement);
            while (matcher.find()) {
                assertFalse(matcher.group().contains("?"), "a parameter inside " + matcher.group() + " of " + statement);
            }
        }
    }

    /** Every JdbcStatement {@code holder} holds, its static ones included, and those of the records it holds. */
    private static void collectStatements(Object holder, List<String> statements) throws IllegalAccessException {
        for (Field field : holder.getClass().getDeclaredFields()) {
            field.setAccessible(true);
            Object value = Modifier.isStatic(field.getModifiers()) ? field.get(null) : field.get(holder);
            if (value instanceof JdbcStatement statement) {
                statements.add(statement.positionalSql());
            } else if (value instanceof Record statementsOfOneKind) {
                collectStatements(statementsOfOneKind, statements);
            }
        }
    }

    @Test
    void bindingANameSetsEveryPositionAndAnUnknownNameIsRefused() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("jdbc_statement", 1);
             Connection connection = schema.dataSource().getConnection()) {
            JdbcStatement statement = JdbcStatement.of("SELECT CAST(:a AS int) + CAST(:a AS int) * CAST(:b AS int)");

            int sum = statement.queryFirst(connection, call -> call.integer("a", 3).integer("b", 10),
                    row -> row.getInt(1)).orElseThrow();
            IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                    () -> statement.queryFirst(connection, call -> call.integer("c", 1), row -> row.getInt(1)));

            assertEquals(33, sum);
            assertTrue(unknown.getMessage().startsWith("no parameter :c"), unknown.getMessage());
        }
    }
}

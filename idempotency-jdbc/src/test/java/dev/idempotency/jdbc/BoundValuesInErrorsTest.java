package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementExceptions;
import org.jdbi.v3.core.statement.UnableToExecuteStatementException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.util.PSQLException;

/**
 * A failing statement of the executor that bound a business failure does not quote it in any
 * exception message, also on an executor built on the user's own Jdbi, which stays as the user
 * configured it.
 */
class BoundValuesInErrorsTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(3);

    @BeforeAll
    static void setUp() {
        db.schema.execute("ALTER TABLE idempotency_keys ADD CONSTRAINT test_refuses_failure "
                + "CHECK (failure IS NULL OR failure->>'message' NOT LIKE 'refuse-me%')");
    }

    @Test
    void aFailedStatementOfAnExecutorOnTheUsersJdbiKeepsTheTypeAndSqlStateButQuotesNoBoundValue() {
        String marker = "PERSONAL" + UUID.randomUUID().toString().replace("-", "");
        Jdbi users = Jdbi.create(db.schema.dataSource());
        Object renderingBefore = users.getConfig(StatementExceptions.class).getMessageRendering();
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(users)
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();

        UnableToExecuteStatementException e = assertThrows(UnableToExecuteStatementException.class,
                () -> executor.run(newKey(), "t1", String.class, tx -> {
                    throw new BusinessFailure("declined", "refuse-me " + marker, Map.of("card", marker));
                }));

        PSQLException cause = assertInstanceOf(PSQLException.class, e.getCause());
        assertEquals("23514", cause.getSQLState(), "check_violation, as PostgreSQL reported it");
        assertTrue(e.getMessage().contains("test_refuses_failure"), e.getMessage());
        assertTrue(cause.getServerErrorMessage().getDetail().startsWith("Failing row contains"), "code can still read the detail");
        for (Throwable t : chain(e)) {
            assertFalse(String.valueOf(t.getMessage()).contains(marker), t.toString());
        }
        assertEquals(renderingBefore, users.getConfig(StatementExceptions.class).getMessageRendering(),
                "the user's Jdbi is not reconfigured");
    }

    private static List<Throwable> chain(Throwable e) {
        List<Throwable> all = new ArrayList<>();
        List<Throwable> todo = new ArrayList<>(List.of(e));
        while (!todo.isEmpty()) {
            Throwable t = todo.remove(0);
            if (t == null || all.contains(t)) {
                continue;
            }
            all.add(t);
            todo.add(t.getCause());
            todo.addAll(List.of(t.getSuppressed()));
            if (t instanceof SQLException sql) {
                todo.add(sql.getNextException());
            }
        }
        return all;
    }
}

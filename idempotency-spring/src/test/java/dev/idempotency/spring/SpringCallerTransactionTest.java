package dev.idempotency.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/** Which Spring transactions {@link SpringCallerTransaction} reports, and when its after-commit actions run. */
class SpringCallerTransactionTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    private final SpringCallerTransaction caller = SpringCallerTransaction.builder(db.dataSource()).build();
    private final TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(db.dataSource()));

    @Test
    void outsideAnyTransactionThereIsNone() {
        assertEquals(Optional.empty(), caller.current());
    }

    @Test
    void insideATransactionOfTheDataSourceItIsTheConnectionJdbcTemplateWritesOn() {
        transactions.executeWithoutResult(status -> {
            Connection current = caller.current().orElseThrow();
            Connection springs = DataSourceUtils.getConnection(db.dataSource());
            try {
                assertSame(springs, current);
            } finally {
                DataSourceUtils.releaseConnection(springs, db.dataSource());
            }
            assertEquals(current, caller.current().orElseThrow(), "asking again gives the same connection");
        });
    }

    @Test
    void aSupportsScopeWithoutATransactionIsNone() {
        TransactionTemplate supports = new TransactionTemplate(transactions.getTransactionManager());
        supports.setPropagationBehavior(TransactionDefinition.PROPAGATION_SUPPORTS);
        supports.executeWithoutResult(status -> {
            new JdbcTemplate(db.dataSource()).queryForObject("SELECT 1", Integer.class); // binds an auto-commit connection
            assertEquals(Optional.empty(), caller.current());
        });
    }

    @Test
    void aTransactionOfAnotherDataSourceIsNone() {
        try (HikariDataSource other = db.newPool(1)) {
            new TransactionTemplate(new DataSourceTransactionManager(other))
                    .executeWithoutResult(status -> assertEquals(Optional.empty(), caller.current()));
        }
    }

    @Test
    void afterCommitActionsRunAfterTheCommitAndNeverAfterARollback() {
        List<String> ran = new ArrayList<>();

        transactions.executeWithoutResult(status -> {
            caller.afterCommit(() -> ran.add("committed"));
            assertTrue(ran.isEmpty());
        });
        transactions.executeWithoutResult(status -> {
            caller.afterCommit(() -> ran.add("rolled back"));
            status.setRollbackOnly();
        });

        assertEquals(List.of("committed"), ran);
    }

    @Test
    void afterCommitWithoutATransactionSaysSo() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> caller.afterCommit(() -> { }));

        assertTrue(refused.getMessage().contains("No Spring transaction synchronization"), refused.getMessage());
    }
}

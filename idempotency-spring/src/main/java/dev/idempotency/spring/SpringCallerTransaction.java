package dev.idempotency.spring;

import dev.idempotency.jdbc.CallerTransaction;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The transaction Spring manages on the calling thread for one {@link DataSource}, for an executor
 * that joins or refuses it:
 * {@code PostgresIdempotentExecutor.builder(dataSource).joinCallerTransactions(SpringCallerTransaction.builder(dataSource).build())}.
 * Its connection is the one {@code JdbcTemplate}, Spring Data JDBC or JPA (through
 * {@code JpaTransactionManager}) write on in that transaction, so their writes and the executor's
 * commit or roll back together.
 *
 * <p>Only a transaction on this DataSource counts: a Spring transaction of another resource (another
 * DataSource, JMS), or {@code PROPAGATION_SUPPORTS} without one, leaves {@link #current()} empty.
 * Thread-safe.
 */
public final class SpringCallerTransaction implements CallerTransaction {
    private final DataSource dataSource;

    private SpringCallerTransaction(Builder builder) {
        this.dataSource = builder.dataSource;
    }

    /** The transactions of {@code dataSource}, the same DataSource the executor is built on. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
    }

    @Override
    public Optional<Connection> current() {
        // Checked first, so that no connection is fetched and bound to a transaction of another resource.
        if (!TransactionSynchronizationManager.isActualTransactionActive()
                || !(TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder)) {
            return Optional.empty();
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            // A holder bound outside a transaction of this DataSource has its connection in auto-commit mode.
            return connection.getAutoCommit() ? Optional.empty() : Optional.of(connection);
        } catch (SQLException e) {
            throw new CannotGetJdbcConnectionException("Could not read the auto-commit mode of the transaction's "
                    + "connection", e);
        } finally {
            // Only counts the holder's use down: the connection stays bound to the transaction until it ends.
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    @Override
    public void afterCommit(Runnable action) {
        Objects.requireNonNull(action, "action");
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            throw new IllegalStateException("No Spring transaction synchronization is active on this thread, so nothing "
                    + "can run after its commit; call afterCommit only while current() returns a connection.");
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCommit() {
                action.run();
            }
        });
    }

    /** Builds a {@link SpringCallerTransaction}; nothing to set but the DataSource, for now. */
    public static final class Builder {
        private final DataSource dataSource;

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /** A CallerTransaction over Spring's transactions of the builder's DataSource. */
        public SpringCallerTransaction build() {
            return new SpringCallerTransaction(this);
        }
    }
}

package dev.idempotency.jdbc;

import org.jdbi.v3.core.Handle;

/**
 * Who ends the transaction a callback runs in: the executor commits its own transaction; a
 * caller's transaction the executor joined is the caller's to commit or roll back.
 */
interface TransactionOwner {

    /** The executor's own transaction: commits with {@link PgTransactions#commit}, signals at once. */
    TransactionOwner EXECUTOR = new TransactionOwner() {
        @Override
        public void commitStored(Handle handle) {
            PgTransactions.commit(handle);
        }

        @Override
        public void whenCommitted(Runnable signal) {
            signal.run();
        }

        @Override
        public boolean executorCommits() {
            return true;
        }
    };

    /** Commits what the callback stored, when the executor owns the transaction; else nothing. */
    void commitStored(Handle handle);

    /** Runs {@code signal} once what was stored is committed: now, or when the caller commits. */
    void whenCommitted(Runnable signal);

    /** True for the executor's own transaction, whose COMMIT may travel with the last statement. */
    default boolean executorCommits() {
        return false;
    }

    /** A transaction the caller opened: the caller commits it, and its commit signals. */
    static TransactionOwner caller(CallerTransaction transaction) {
        return new TransactionOwner() {
            @Override
            public void commitStored(Handle handle) {
            }

            @Override
            public void whenCommitted(Runnable signal) {
                transaction.afterCommit(signal);
            }
        };
    }
}

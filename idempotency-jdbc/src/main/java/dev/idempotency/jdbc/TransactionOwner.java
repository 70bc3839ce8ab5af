package dev.idempotency.jdbc;

/**
 * Who ends the transaction a callback runs in: the executor commits its own transaction; a
 * caller's transaction the executor joined is the caller's to commit or roll back, and the call
 * only releases the savepoint it took there before its claim.
 */
interface TransactionOwner {

    /** What the statement that stores a callback's outcome ends with. */
    enum Ending {
        /** The executor's COMMIT ({@link ExecutorSql#thenCommit}, or a separate one, see {@link CallbackRunner}). */
        COMMIT,
        /** Releasing the claim's savepoint in the caller's transaction ({@link ExecutorSql#thenReleaseClaim}). */
        RELEASE_CLAIM_SAVEPOINT
    }

    /** The executor's own transaction: committed by the executor, which then signals at once. */
    TransactionOwner EXECUTOR = new TransactionOwner() {
        @Override
        public Ending ending() {
            return Ending.COMMIT;
        }

        @Override
        public void whenCommitted(Runnable signal) {
            signal.run();
        }
    };

    /** What the statement that stores the outcome ends with. */
    Ending ending();

    /** Runs {@code signal} once what was stored is committed: now, or when the caller commits. */
    void whenCommitted(Runnable signal);

    /** Called once the statement that stored the outcome ran, its ending included. */
    default void ended() {
    }

    /** Called after {@link #ended()} when what was stored is the callback's result (as JSON, with its type's name). */
    default void storedResult(String resultJson, String resultType) {
    }

    /** Called after {@link #ended()} when what was stored is the callback's business failure (as JSON). */
    default void storedFailure(String failureJson) {
    }

    /**
     * One call in a transaction the caller opened: the caller commits it, and its commit signals;
     * {@link #released()} tells whether the call's claim savepoint is gone already.
     */
    static Joined joined(CallerTransaction transaction) {
        return new Joined(transaction);
    }

    /** A caller's transaction, for one call. */
    final class Joined implements TransactionOwner {
        private final CallerTransaction transaction;
        private boolean released;

        private Joined(CallerTransaction transaction) {
            this.transaction = transaction;
        }

        @Override
        public Ending ending() {
            return Ending.RELEASE_CLAIM_SAVEPOINT;
        }

        @Override
        public void whenCommitted(Runnable signal) {
            transaction.afterCommit(signal);
        }

        @Override
        public void ended() {
            released = true;
        }

        /** True once the outcome was stored and the claim's savepoint released with it: nothing to undo then. */
        boolean released() {
            return released;
        }
    }
}

package dev.idempotency.spring.boot;

/** Told how each executor call ended; the Micrometer binding counts them. Must be quick. */
interface ExecutorOutcomeListener {
    void ended(ExecutorOutcome outcome, boolean replayed);
}

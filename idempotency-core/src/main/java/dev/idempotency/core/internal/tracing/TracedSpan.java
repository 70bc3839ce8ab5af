package dev.idempotency.core.internal.tracing;

/**
 * One span the library started, current on the thread that started it until {@link #close()}, which
 * that thread calls. Takes no key, tenant or payload: only outcomes and error types. Not API.
 */
public interface TracedSpan extends AutoCloseable {
    /** The span of {@link Traces#none()}: does nothing. */
    TracedSpan NONE = new TracedSpan() {
        @Override
        public void outcome(String outcome) {
        }

        @Override
        public void error(String errorType) {
        }

        @Override
        public void messages(String outcome, long count) {
        }

        @Override
        public void close() {
        }
    };

    /** Sets {@code idempotency.outcome} ({@code first_run}, {@code replay}, {@code in_progress}, ...). */
    void outcome(String outcome);

    /** Sets {@code idempotency.messages.<outcome>}: how many messages of a batch had {@code outcome}. */
    void messages(String outcome, long count);

    /**
     * Marks the span failed, with {@code error.type} set to {@code errorType} (an exception's class name
     * or a low-cardinality code). Never the exception's message: it can quote keys and payloads.
     */
    void error(String errorType);

    /** Ends the span and restores the context that was current before it. */
    @Override
    void close();
}

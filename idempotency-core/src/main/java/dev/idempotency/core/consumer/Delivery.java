package dev.idempotency.core.consumer;

import java.util.Objects;

/**
 * What a consumer should do with a delivery after {@link IdempotentConsumer#consume}: acknowledge
 * it (its effects are committed, now or by an earlier delivery), leave it for redelivery, or reject
 * it to the broker's dead-letter queue (neither {@link #acknowledge()} nor {@link #retryLater()}).
 */
public final class Delivery {
    /** Why the decision was made. */
    public enum Outcome {
        /** The handler ran and committed now: acknowledge. */
        APPLIED,
        /** An earlier delivery of the same message already committed its effects: acknowledge. */
        DUPLICATE,
        /** The handler declared the message inapplicable (a business failure, stored): acknowledge. */
        FAILED_PERMANENTLY,
        /** Another consumer is applying this message right now: redeliver later. */
        IN_PROGRESS,
        /** The handler or the database failed in a way a retry may fix; nothing was committed: redeliver later. */
        TRANSIENT_FAILURE,
        /** The message id or tenant is malformed and can never be processed: reject or dead-letter it. */
        INVALID,
        /**
         * The handler failed on this delivery for the consumer's {@code maxAttempts}-th time; nothing was
         * committed, and redelivering it would only fail again: reject or dead-letter it.
         */
        DEAD_LETTER
    }

    private final Outcome outcome;
    private final Exception error;

    private Delivery(Outcome outcome, Exception error) {
        this.outcome = Objects.requireNonNull(outcome, "outcome");
        this.error = error;
    }

    /**
     * A decision without an exception, as consumers built on this package make it (the batch consumer
     * of {@code idempotency-jdbc}); {@link IdempotentConsumer} is where applications get theirs.
     */
    public static Delivery of(Outcome outcome) {
        return new Delivery(outcome, null);
    }

    /** A decision made because of {@code error}, which {@link #error()} then returns; see {@link #of}. */
    public static Delivery failed(Outcome outcome, Exception error) {
        return new Delivery(outcome, Objects.requireNonNull(error, "error"));
    }

    public Outcome outcome() {
        return outcome;
    }

    /** True when the broker should be told the message is done (ack); false means redeliver or reject. */
    public boolean acknowledge() {
        return outcome == Outcome.APPLIED || outcome == Outcome.DUPLICATE || outcome == Outcome.FAILED_PERMANENTLY;
    }

    /** True when the message should come again later (nack with requeue, or no ack). */
    public boolean retryLater() {
        return outcome == Outcome.IN_PROGRESS || outcome == Outcome.TRANSIENT_FAILURE;
    }

    /** The exception behind a failure outcome; null otherwise. */
    public Exception error() {
        return error;
    }

    @Override
    public String toString() {
        return error == null ? outcome.name() : outcome + ": " + error;
    }
}

package dev.idempotency.core.internal.tracing;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.core.consumer.Delivery;

/**
 * The values of {@code idempotency.outcome}, one vocabulary for the executor, the consumer and the
 * HTTP layer, and the outcome an exception stands for. Not API.
 */
public final class SpanOutcomes {
    /** The callback ran and its outcome committed now. */
    public static final String FIRST_RUN = "first_run";
    /** A stored outcome (result or business failure) was returned; nothing ran. */
    public static final String REPLAY = "replay";
    /** The callback declared a business failure, stored now. */
    public static final String BUSINESS_FAILURE = "business_failure";
    /** Another caller held the key past the wait budget. */
    public static final String IN_PROGRESS = "in_progress";
    /** The key was used before for another request. */
    public static final String KEY_REUSED = "key_reused";
    /** The database failed in a way a retry may fix. */
    public static final String TRANSIENT_FAILURE = "transient_failure";
    /** The key, tenant or message id was malformed (or, over HTTP, the key header). */
    public static final String INVALID = "invalid";
    /** The consumer gave up on the message after its last attempt. */
    public static final String DEAD_LETTER = "dead_letter";
    /** Anything else: the callback or handler threw, nothing committed. */
    public static final String ERROR = "error";

    private SpanOutcomes() {
    }

    /** The outcome of a consumer's delivery. */
    public static String of(Delivery.Outcome outcome) {
        return switch (outcome) {
            case APPLIED -> FIRST_RUN;
            case DUPLICATE -> REPLAY;
            case FAILED_PERMANENTLY -> BUSINESS_FAILURE;
            case IN_PROGRESS -> IN_PROGRESS;
            case TRANSIENT_FAILURE -> TRANSIENT_FAILURE;
            case INVALID -> INVALID;
            case DEAD_LETTER -> DEAD_LETTER;
        };
    }

    /** Whether a delivery with {@code outcome} marks its span failed: the consumer's error outcomes. */
    public static boolean failed(Delivery.Outcome outcome) {
        return outcome == Delivery.Outcome.TRANSIENT_FAILURE || outcome == Delivery.Outcome.DEAD_LETTER;
    }

    /** The outcome a call that threw {@code e} had. */
    public static String of(Throwable e) {
        if (e instanceof BusinessFailure failure) {
            return failure.replayed() ? REPLAY : BUSINESS_FAILURE;
        }
        if (e instanceof KeyInProgressException) {
            return IN_PROGRESS;
        }
        if (e instanceof KeyReusedException) {
            return KEY_REUSED;
        }
        if (e instanceof TransientFailureException) {
            return TRANSIENT_FAILURE;
        }
        if (e instanceof InvalidIdempotencyKeyException || e instanceof IllegalArgumentException) {
            return INVALID;
        }
        return ERROR;
    }

    /**
     * Records on {@code span} how a call that threw {@code e} ended: its outcome, and for a failure
     * that is not a stored outcome (an error, a transient failure) the exception's class as error.type.
     */
    public static void threw(TracedSpan span, Throwable e) {
        String outcome = of(e);
        span.outcome(outcome);
        if (outcome.equals(ERROR) || outcome.equals(TRANSIENT_FAILURE)) {
            span.error(e.getClass().getName());
        }
    }
}

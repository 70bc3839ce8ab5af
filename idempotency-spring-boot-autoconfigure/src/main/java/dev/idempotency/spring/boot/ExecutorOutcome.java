package dev.idempotency.spring.boot;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.TransientFailureException;

/** How one executor call ended, as the {@code outcome} tag of {@code idempotency.executor.calls}. */
enum ExecutorOutcome {
    FIRST_RUN("first_run"),
    REPLAY("replay"),
    IN_PROGRESS("in_progress"),
    KEY_REUSED("key_reused"),
    BUSINESS_FAILURE("business_failure"),
    TRANSIENT_FAILURE("transient_failure"),
    /** Any other exception: the callback's own, an invalid key, a result that cannot be stored. */
    ERROR("error");

    private final String tag;

    ExecutorOutcome(String tag) {
        this.tag = tag;
    }

    String tag() {
        return tag;
    }

    /** The outcome of a call that threw {@code failure}. */
    static ExecutorOutcome of(Throwable failure) {
        if (failure instanceof BusinessFailure) {
            return BUSINESS_FAILURE;
        }
        if (failure instanceof KeyInProgressException) {
            return IN_PROGRESS;
        }
        if (failure instanceof KeyReusedException) {
            return KEY_REUSED;
        }
        if (failure instanceof TransientFailureException) {
            return TRANSIENT_FAILURE;
        }
        return ERROR;
    }
}

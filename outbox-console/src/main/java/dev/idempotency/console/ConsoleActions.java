package dev.idempotency.console;

import dev.idempotency.outbox.OutboxDeadLetter;
import dev.idempotency.outbox.OutboxDeadLetters;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an operator does from the console, each logged at INFO with who did it, what, and which ids;
 * never a payload (a reveal logs that it happened, not what was shown).
 */
final class ConsoleActions {
    /** Most dead letters one "requeue all" puts back, so that every id it touched can be logged. */
    static final int REQUEUE_ALL_LIMIT = 10_000;

    private static final Logger log = LoggerFactory.getLogger(ConsoleActions.class);

    private final OutboxDeadLetters deadLetters;
    private final ConsoleQueries queries;

    ConsoleActions(OutboxDeadLetters deadLetters, ConsoleQueries queries) {
        this.deadLetters = deadLetters;
        this.queries = queries;
    }

    /** Puts dead letter {@code id} back in line; false when there is no such dead letter. */
    boolean requeue(String user, long id) {
        boolean requeued = deadLetters.requeue(id);
        if (requeued) {
            log.info("console: {} requeued dead letter {}", user, id);
        } else {
            log.info("console: {} asked to requeue dead letter {}, which is not a dead letter (requeued or published already)",
                    user, id);
        }
        return requeued;
    }

    /**
     * Puts the oldest {@value #REQUEUE_ALL_LIMIT} dead letters back in line, one statement each, and
     * returns the ids requeued (those another operator requeued meanwhile are left out).
     */
    List<Long> requeueAll(String user) {
        List<Long> requeued = new ArrayList<>();
        for (OutboxDeadLetter dead : deadLetters.list(REQUEUE_ALL_LIMIT)) {
            if (deadLetters.requeue(dead.id())) {
                requeued.add(dead.id());
            }
        }
        log.info("console: {} requeued all dead letters: {} requeued, ids {}", user, requeued.size(), requeued);
        return requeued;
    }

    /** Dead letter {@code id}'s payload, logged as revealed (without it); empty when there is no such dead letter. */
    Optional<String> revealPayload(String user, long id) {
        Optional<String> payload = queries.deadLetterPayload(id);
        if (payload.isPresent()) {
            log.info("console: {} revealed the payload of dead letter {}", user, id);
        }
        return payload;
    }
}

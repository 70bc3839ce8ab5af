package dev.idempotency.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.jdbc.UnknownOutcomes;
import dev.idempotency.outbox.OutboxDeadLetter;
import dev.idempotency.outbox.OutboxDeadLetters;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongPredicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an operator does from the console, each logged at INFO with who did it, what, and which ids
 * or keys; never a payload nor a stored result (a reveal logs that it happened, not what was shown).
 * Unknown outcomes are resolved through {@link UnknownOutcomes}, which alone decides which keys may be.
 */
final class ConsoleActions {
    /** Most dead letters one "requeue all" puts back, so that every id it touched can be logged. */
    static final int REQUEUE_ALL_LIMIT = 10_000;
    /** Longest note an operator may leave with a resolution; it goes to the log on one line. */
    static final int MAX_NOTE_LENGTH = 500;

    private static final Logger log = LoggerFactory.getLogger(ConsoleActions.class);
    /** Reads an operator's result JSON as plain Java values, decimals exactly (as a replay reads them). */
    private static final ObjectReader RESULT_READER = new ObjectMapper().reader()
            .with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS, DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .forType(Object.class);

    /** An operator's request the console cannot carry out as given; the message says what to change. */
    static final class Refused extends RuntimeException {
        Refused(String message) {
            super(message);
        }
    }

    private final OutboxDeadLetters deadLetters;
    private final UnknownOutcomes unknownOutcomes;
    private final ConsoleQueries queries;

    ConsoleActions(OutboxDeadLetters deadLetters, UnknownOutcomes unknownOutcomes, ConsoleQueries queries) {
        this.deadLetters = deadLetters;
        this.unknownOutcomes = unknownOutcomes;
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

    /** Puts the dead letters {@code ids} back in line, one statement each; returns those requeued. */
    List<Long> requeue(String user, List<Long> ids) {
        List<Long> requeued = each(ids, deadLetters::requeue);
        log.info("console: {} requeued selected dead letters: {} of {} requeued, ids {}", user, requeued.size(), ids.size(),
                requeued);
        return requeued;
    }

    /**
     * Puts the oldest {@value #REQUEUE_ALL_LIMIT} dead letters {@code filter} keeps back in line, one
     * statement each, and returns the ids requeued (those another operator requeued meanwhile are left out).
     */
    List<Long> requeueMatching(String user, DeadLetterFilter filter) {
        List<Long> ids = queries.deadLetters(filter, REQUEUE_ALL_LIMIT).stream().map(OutboxDeadLetter::id).toList();
        List<Long> requeued = each(ids, deadLetters::requeue);
        log.info("console: {} requeued all dead letters{}: {} requeued, ids {}", user,
                filter.isEmpty() ? "" : " matching " + oneLine(filter.query()), requeued.size(), requeued);
        return requeued;
    }

    /** Deletes the dead letters {@code ids} for good, one statement each; returns those deleted. */
    List<Long> delete(String user, List<Long> ids) {
        List<Long> deleted = each(ids, deadLetters::delete);
        log.info("console: {} deleted dead letters: {} of {} deleted, ids {}", user, deleted.size(), ids.size(), deleted);
        return deleted;
    }

    /** Dead letter {@code id}'s payload, logged as revealed (without it); empty when there is no such dead letter. */
    Optional<String> revealPayload(String user, long id) {
        Optional<String> payload = queries.deadLetterPayload(id);
        if (payload.isPresent()) {
            log.info("console: {} revealed the payload of dead letter {}", user, id);
        }
        return payload;
    }

    /** What key {@code key} of {@code tenant} stores, logged as revealed (without it); empty when there is no such key. */
    Optional<ConsoleQueries.StoredOutcome> revealStored(String user, String tenant, String key) {
        Optional<ConsoleQueries.StoredOutcome> stored = queries.keyStored(tenant, key);
        if (stored.isPresent()) {
            log.info("console: {} revealed what key {} of tenant {} stores", user, key, tenant);
        }
        return stored;
    }

    /**
     * Records that the unknown outcome of {@code key} took effect with the result {@code resultJson}
     * (JSON: a string, number, object...); false when the key is not an unknown outcome (resolved already).
     */
    boolean resolveAsSucceeded(String user, String tenant, String key, String resultJson, String note) {
        String checkedNote = note(note);
        Object result = result(resultJson);
        boolean resolved;
        try {
            resolved = unknownOutcomes.resolveAsCompleted(key, tenant, result);
        } catch (ResultNotStorableException | IllegalArgumentException e) {
            throw new Refused(e.getMessage());
        }
        logResolution(user, tenant, key, resolved, "as succeeded", checkedNote);
        return resolved;
    }

    /**
     * Records that the unknown outcome of {@code key} failed for good with {@code code} and
     * {@code message}, which replays throw; false when the key is not an unknown outcome.
     */
    boolean resolveAsFailed(String user, String tenant, String key, String code, String message, String note) {
        String checkedNote = note(note);
        if (code == null || code.isBlank() || message == null || message.isBlank()) {
            throw new Refused("a failure needs a code (e.g. card_declined) and the message replays throw");
        }
        boolean resolved;
        try {
            resolved = unknownOutcomes.resolveAsFailed(key, tenant, new BusinessFailure(code.strip(), message.strip()));
        } catch (IllegalArgumentException e) {
            throw new Refused(e.getMessage());
        }
        logResolution(user, tenant, key, resolved, "as failed with code " + oneLine(code.strip()), checkedNote);
        return resolved;
    }

    private static void logResolution(String user, String tenant, String key, boolean resolved, String how, String note) {
        if (resolved) {
            log.info("console: {} resolved the unknown outcome of key {} of tenant {} {}; note: {}", user, key, tenant, how, note);
        } else {
            log.info("console: {} asked to resolve key {} of tenant {} {}, which is not an unknown outcome (resolved"
                    + " already, or never one); nothing changed", user, key, tenant, how);
        }
    }

    /** Checks a key and tenant from a form as the executor does, before any SQL runs. */
    static void validateKey(String tenant, String key) {
        try {
            IdempotencyKeys.validate(key, tenant);
        } catch (IllegalArgumentException e) {
            throw new Refused(e.getMessage());
        }
    }

    private static Object result(String json) {
        if (json == null || json.isBlank()) {
            throw new Refused("a resolution as succeeded needs the result replays return, as JSON");
        }
        Object result;
        try {
            result = RESULT_READER.readValue(json);
        } catch (JsonProcessingException e) {
            throw new Refused("the result is not JSON (" + e.getOriginalMessage() + "); quote a text: \"ch_1\"");
        }
        if (result == null) {
            throw new Refused("the result is JSON null, which is not stored as an outcome; give the value replays return");
        }
        return result;
    }

    private static String note(String note) {
        if (note == null || note.isBlank()) {
            throw new Refused("a resolution needs a note saying what the external system showed");
        }
        if (note.length() > MAX_NOTE_LENGTH) {
            throw new Refused("the note is " + note.length() + " characters, over " + MAX_NOTE_LENGTH);
        }
        return oneLine(note.strip());
    }

    /** Control characters (line breaks) as spaces, so text an operator typed stays one log line. */
    private static String oneLine(String text) {
        return text.replaceAll("\\p{Cntrl}", " ");
    }

    private static List<Long> each(List<Long> ids, LongPredicate action) {
        List<Long> done = new ArrayList<>();
        for (long id : ids) {
            if (action.test(id)) {
                done.add(id);
            }
        }
        return done;
    }
}

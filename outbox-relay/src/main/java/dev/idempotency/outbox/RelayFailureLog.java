package dev.idempotency.outbox;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the relay tells the operator about events that do not go through: failed attempts (WARN, at
 * most one line per topic and error code per interval, the next one counting those left out), every
 * dead letter (WARN). Broker outages are {@link PublisherOutage}'s to log.
 *
 * <p>A line names the event id, message id, topic and an error code, never the payload or the
 * publisher's whole error text, which may quote what the receiver answered (an HTTP body echoing
 * the payload): the code is the error's first line up to its first {@code ": "} (only the status for
 * {@code HTTP nnn ...}, plus an AMQP reply code such as {@code 312 NO_ROUTE} where there is one), at
 * most {@value #MAX_CODE_LENGTH} characters. The whole text stays in the row's {@code last_error}.
 */
final class RelayFailureLog {
    /** How long a (topic, error code) pair stays quiet after one of its failures was logged. */
    static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);
    static final int MAX_CODE_LENGTH = 100;
    /** (topic, code) pairs remembered at most; beyond, quiet pairs are forgotten. */
    private static final int MAX_TRACKED = 1000;
    private static final Pattern HTTP_STATUS = Pattern.compile("HTTP (\\d{3})\\b");
    /** An AMQP reply code and text as RabbitMqPublisher writes them: "(312 NO_ROUTE, exchange ...". */
    private static final Pattern AMQP_REPLY = Pattern.compile("\\((\\d{3} [A-Z][A-Z_]{2,})[,)]");

    /** Why an event was dead-lettered. */
    enum DeadLetterCause {
        RETRIES_EXHAUSTED("out of attempts"),
        REJECTED("rejected by the publisher"),
        UNDECODABLE("undecodable row");

        private final String text;

        DeadLetterCause(String text) {
            this.text = text;
        }
    }

    private record Key(String topic, String code) {
    }

    /** The quiet period of one pair: when its last line was logged, and how many failures were left out since. */
    private static final class Window {
        long loggedAt;
        long suppressed;

        Window(long loggedAt) {
            this.loggedAt = loggedAt;
        }
    }

    private final Logger log;
    private final String instanceId;
    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private final Map<Key, Window> windows = new HashMap<>();

    RelayFailureLog(String instanceId) {
        this(instanceId, DEFAULT_INTERVAL, System::nanoTime, LoggerFactory.getLogger(RelayFailureLog.class));
    }

    RelayFailureLog(String instanceId, Duration interval, LongSupplier nanoClock, Logger log) {
        this.instanceId = instanceId;
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
        this.log = log;
    }

    /** An attempt failed and will be retried: logged unless this topic and error code were logged within the interval. */
    synchronized void publishFailed(OutboxEvent event, PublishResult result) {
        String code = errorCode(result.error());
        long now = nanoClock.getAsLong();
        Key key = new Key(event.topic(), code);
        Window window = windows.get(key);
        if (window != null && now - window.loggedAt < intervalNanos) {
            window.suppressed++;
            return;
        }
        long suppressed = window == null ? 0 : window.suppressed;
        if (window == null) {
            forgetQuietPairs(now);
            windows.put(key, new Window(now));
        } else {
            window.loggedAt = now;
            window.suppressed = 0;
        }
        if (log.isWarnEnabled()) {
            log.warn("relay {}: publishing outbox event {} (message id {}, topic {}, attempt {}) failed: {}; it will be"
                            + " retried{}", instanceId, event.id(), event.messageId(), event.topic(), event.attempt(), code,
                    suppressed == 0 ? "" : " (" + suppressed + " more failures of this topic with this error since the"
                            + " last such line)");
        }
    }

    /** Event {@code event} was dead-lettered after {@code attempts} attempts; {@code error} is the last one. */
    void deadLettered(ClaimedEvent event, int attempts, DeadLetterCause cause, String error) {
        if (!log.isWarnEnabled()) {
            return;
        }
        String messageId = event.decoded() ? event.event().messageId() : "unknown";
        log.warn("relay {}: dead-lettered outbox event {} (message id {}, topic {}, attempts {}): {}, last error {};"
                        + " list and requeue dead letters with OutboxDeadLetters or the dead-letters command", instanceId,
                event.id(), messageId, event.key().topic(), attempts, cause.text, errorCode(error));
    }

    /**
     * A short, stable name for an error, safe to log: the first line up to its first {@code ": "},
     * just {@code HTTP nnn} for an HTTP status, with an AMQP reply code appended where the line has one.
     */
    static String errorCode(String error) {
        if (error == null || error.isBlank()) {
            return "(no message)";
        }
        String line = error.strip().lines().findFirst().orElse("");
        Matcher http = HTTP_STATUS.matcher(line);
        if (http.lookingAt()) {
            return "HTTP " + http.group(1);
        }
        int colon = line.indexOf(": ");
        String code = colon < 0 ? line : line.substring(0, colon);
        Matcher amqp = AMQP_REPLY.matcher(line);
        if (amqp.find() && !code.contains(amqp.group(1))) {
            code = code + " " + amqp.group(1);
        }
        return code.length() <= MAX_CODE_LENGTH ? code : code.substring(0, MAX_CODE_LENGTH - 3) + "...";
    }

    private void forgetQuietPairs(long now) {
        if (windows.size() >= MAX_TRACKED) {
            windows.values().removeIf(w -> now - w.loggedAt >= intervalNanos);
            if (windows.size() >= MAX_TRACKED) {
                windows.clear();
            }
        }
    }
}

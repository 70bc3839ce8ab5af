package dev.idempotency.core.outbox;

import java.util.Objects;

/**
 * How publishing one event went: delivered, failed in a way a retry may fix, rejected for good
 * (the relay dead-letters it at once), or not tried because the broker could not be reached at all
 * (the relay pauses as a whole and counts nothing against the event).
 */
public final class PublishResult {
    /** The four ways a publish attempt ends. */
    public enum Status { PUBLISHED, RETRY, REJECTED, UNAVAILABLE }

    private static final PublishResult PUBLISHED = new PublishResult(Status.PUBLISHED, null);

    private final Status status;
    private final String error;

    private PublishResult(Status status, String error) {
        this.status = status;
        this.error = error;
    }

    /** The broker acknowledged the event. */
    public static PublishResult published() {
        return PUBLISHED;
    }

    /** A failure that may pass (timeout, broker down, HTTP 5xx/408/429): the relay retries with backoff. */
    public static PublishResult retry(String error) {
        return new PublishResult(Status.RETRY, Objects.requireNonNull(error, "error"));
    }

    /** A failure no retry fixes (HTTP 4xx, a message the broker refuses): the relay dead-letters the event. */
    public static PublishResult rejected(String error) {
        return new PublishResult(Status.REJECTED, Objects.requireNonNull(error, "error"));
    }

    /**
     * The broker or endpoint is unavailable as a whole (connection refused, connect timeout, no
     * connection, the connection died before the broker answered): nothing is known against this
     * event. The relay counts no attempt, never dead-letters for it, pauses publishing with its own
     * backoff and later sends the same events again, in order. Use it only for failures that are not
     * about the event itself: an event that always yields it would hold the relay paused forever.
     */
    public static PublishResult unavailable(String error) {
        return new PublishResult(Status.UNAVAILABLE, Objects.requireNonNull(error, "error"));
    }

    public Status status() {
        return status;
    }

    /** What went wrong; null when published. */
    public String error() {
        return error;
    }

    @Override
    public String toString() {
        return error == null ? status.name() : status + ": " + error;
    }
}

package dev.idempotency.outbox;

import dev.idempotency.core.outbox.Publisher;
import java.time.Duration;
import java.util.Optional;

/**
 * Decides how long the relay waits for one publish call. A publisher that bounds its own calls
 * ({@link Publisher#maxCallDuration()}) owns the limit: the relay waits that long plus a margin, so
 * it never gives up on a call the publisher would still complete. An explicit relay
 * {@code publishTimeout} shorter than that is refused, as is a lease too short for the bound.
 */
final class PublishCallBound {
    private static final Duration MIN_MARGIN = Duration.ofMillis(500);

    private PublishCallBound() {
    }

    /** The relay's settings with its effective call bound; throws IllegalArgumentException naming the settings that disagree. */
    static OutboxRelayConfig apply(OutboxRelayConfig config, Publisher publisher) {
        Optional<Duration> declared = publisher.maxCallDuration();
        if (declared.isEmpty()) {
            return config.withPublishTimeout(config.publishTimeout());
        }
        Duration needed = declared.get().plus(margin(declared.get()));
        String source = "the publisher's own limit on one call (" + publisher.getClass().getSimpleName()
                + ".maxCallDuration() = " + declared.get() + ", from its connect and acknowledgement timeouts)";
        if (config.publishTimeoutSet() && config.publishTimeout().compareTo(needed) < 0) {
            throw new IllegalArgumentException("publishTimeout (--publish-timeout, " + config.publishTimeout()
                    + ") is shorter than " + source + " plus a margin (" + needed + "): the relay would give up on"
                    + " calls that may still deliver and send their events again. Leave publishTimeout unset so"
                    + " the relay derives it, set it to at least " + needed + ", or lower the publisher's timeouts");
        }
        Duration effective = config.publishTimeoutSet() ? config.publishTimeout() : needed;
        try {
            return config.withPublishTimeout(effective);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + " (the publish call bound " + effective
                    + " is derived from " + source + "; raise leaseDuration (--lease) or lower the publisher's timeouts)", e);
        }
    }

    /** Slack for timers firing late, scheduling and GC: a tenth of the limit, at least half a second. */
    static Duration margin(Duration declared) {
        Duration tenth = declared.dividedBy(10);
        return tenth.compareTo(MIN_MARGIN) < 0 ? MIN_MARGIN : tenth;
    }
}

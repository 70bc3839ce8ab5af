package dev.idempotency.outbox;

import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the broker is unavailable as a whole, and how long the relay waits before trying again:
 * from {@code backoffBase}, doubling, up to {@code backoffMax} but never more than
 * {@value #MAX_PROBE_SECONDS} s, so that publishing resumes soon after the broker is back. Logs the
 * outage once at WARN when it starts (with the error) and once at INFO when it ends (with its length).
 * Used by the relay's worker thread only.
 */
final class PublisherOutage {
    static final long MAX_PROBE_SECONDS = 30;
    private static final Logger log = LoggerFactory.getLogger(PublisherOutage.class);

    private final String instanceId;
    private final RetryBackoff backoff;
    private long startedNanos;
    private int probes;

    PublisherOutage(String instanceId, Duration backoffBase, Duration backoffMax) {
        this.instanceId = instanceId;
        Duration cap = Duration.ofSeconds(MAX_PROBE_SECONDS);
        this.backoff = new RetryBackoff(backoffBase, backoffMax.compareTo(cap) < 0 ? backoffMax : cap);
    }

    /** A publish call found the broker unavailable; the first one of an outage is logged. */
    void unavailable(String error) {
        if (probes == 0) {
            startedNanos = System.nanoTime();
            log.warn("relay {}: the broker is unavailable; publishing paused (no attempts counted) until it answers: {}",
                    instanceId, error);
        }
        probes++;
    }

    /** A publish call reached the broker; ends an outage, logging how long it lasted. */
    void available() {
        if (probes > 0) {
            log.info("relay {}: the broker is available again after {} ms of outage ({} tries); publishing resumes",
                    instanceId, Duration.ofNanos(System.nanoTime() - startedNanos).toMillis(), probes);
            probes = 0;
        }
    }

    /** Whether the last publish call found the broker unavailable. */
    boolean active() {
        return probes > 0;
    }

    /** How long to wait before the next try, growing with each failed try of this outage. */
    long nextDelayMillis() {
        return backoff.delayMillis(probes);
    }
}

package dev.idempotency.outbox.metrics.micrometer;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelayListener;
import dev.idempotency.outbox.OutboxStall;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's metrics on a Micrometer {@link MeterRegistry}: hand it to the relay as its
 * {@link OutboxRelayListener}, and it counts what the relay does as it works. Given an
 * {@link OutboxBacklog} and {@link OutboxDeadLetters}, it also keeps gauges of the outbox's state,
 * read from the database only by {@link #refresh()}, which you call on a schedule (every few
 * seconds), so a scrape never waits on the database.
 *
 * <p>Meters (names as Micrometer writes them; Prometheus turns dots into underscores and adds
 * {@code _total} to counters and {@code _seconds} to timers):
 * <ul>
 *   <li>{@code outbox.events.published} (counter): events the broker acknowledged</li>
 *   <li>{@code outbox.publish.failures} (counter): attempts that failed and will be retried</li>
 *   <li>{@code outbox.events.dead.lettered} (counter): events this relay dead-lettered</li>
 *   <li>{@code outbox.commit.to.publish} (timer with a percentile histogram): from the writing
 *       transaction's start to the broker's acknowledgement</li>
 *   <li>{@code outbox.backlog.events}, {@code outbox.oldest.pending.age.seconds},
 *       {@code outbox.oldest.pending.stalled.seconds} (gauges, with a backlog): pending events, the age of
 *       the oldest, and how long that same event has only aged (0 while the relays make progress)</li>
 *   <li>{@code outbox.dead.letters} (gauge, with dead letters): dead letters awaiting an operator</li>
 * </ul>
 * No meter carries a tenant tag; every meter carries the {@link Builder#tags tags} you give.
 */
public final class MicrometerRelayMetrics implements OutboxRelayListener {
    private static final Logger log = LoggerFactory.getLogger(MicrometerRelayMetrics.class);

    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;
    private final Counter published;
    private final Counter failedAttempts;
    private final Counter deadLettered;
    private final Timer commitToPublish;
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong oldestPendingMillis = new AtomicLong();
    private final OutboxStall stall = new OutboxStall();
    private final AtomicLong deadLetterCount = new AtomicLong();
    private volatile long lastRefreshNanos;

    private MicrometerRelayMetrics(Builder builder) {
        MeterRegistry registry = builder.registry;
        Tags tags = builder.tags;
        this.backlog = builder.backlog;
        this.deadLetters = builder.deadLetters;
        this.published = Counter.builder("outbox.events.published").tags(tags)
                .description("Events the broker acknowledged").register(registry);
        this.failedAttempts = Counter.builder("outbox.publish.failures").tags(tags)
                .description("Publish attempts that failed and will be retried").register(registry);
        this.deadLettered = Counter.builder("outbox.events.dead.lettered").tags(tags)
                .description("Events dead-lettered by this process").register(registry);
        this.commitToPublish = Timer.builder("outbox.commit.to.publish").tags(tags)
                .description("From the writing transaction's start to the broker's acknowledgement")
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
        if (backlog != null) {
            Gauge.builder("outbox.backlog.events", pending, AtomicLong::get).tags(tags)
                    .description("Pending events in the outbox").register(registry);
            Gauge.builder("outbox.oldest.pending.age.seconds", oldestPendingMillis, millis -> millis.get() / 1000.0)
                    .tags(tags).description("Age of the oldest pending event").register(registry);
            Gauge.builder("outbox.oldest.pending.stalled.seconds", stall, s -> s.stalledFor().toMillis() / 1000.0)
                    .tags(tags).description("How long the same event has stayed the oldest pending one, only aging "
                            + "(0 while the relays make progress)").register(registry);
        }
        if (deadLetters != null) {
            Gauge.builder("outbox.dead.letters", deadLetterCount, AtomicLong::get).tags(tags)
                    .description("Dead-lettered events awaiting an operator").register(registry);
        }
    }

    /** A builder registering on {@code registry}: counters and the timer, no gauges, no tags. */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(registry);
    }

    @Override
    public void published(OutboxEvent event, Duration sinceCreated) {
        published.increment();
        commitToPublish.record(sinceCreated);
    }

    @Override
    public void publishFailed(OutboxEvent event, String error) {
        failedAttempts.increment();
    }

    @Override
    public void deadLettered(long eventId, String error) {
        deadLettered.increment();
    }

    /**
     * Reads the outbox's state into the gauges (one query per gauge); returns false, logging a
     * warning, if the database did not answer. The gauges keep their last values until the next
     * successful refresh.
     */
    public boolean refresh() {
        try {
            if (backlog != null) {
                pending.set(backlog.pendingCount());
                Duration oldest = backlog.oldestPendingAge();
                oldestPendingMillis.set(oldest.toMillis());
                stall.observe(oldest);
            }
            if (deadLetters != null) {
                deadLetterCount.set(deadLetters.count());
            }
            lastRefreshNanos = System.nanoTime();
            return true;
        } catch (RuntimeException e) {
            log.warn("could not read the outbox's state for metrics: {}", e.getMessage());
            return false;
        }
    }

    /**
     * How long the same event has stayed the oldest pending one across refreshes, only aging: the relays
     * make no progress on it (see {@link OutboxStall}). Zero without a backlog, or while they progress.
     */
    public Duration stalledFor() {
        return stall.stalledFor();
    }

    /** True when the last successful {@link #refresh()} is more recent than {@code maxAge}: the database answers. */
    public boolean freshWithin(Duration maxAge) {
        long last = lastRefreshNanos;
        return last != 0 && System.nanoTime() - last < maxAge.toNanos();
    }

    /** Optional settings of {@link MicrometerRelayMetrics}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private OutboxBacklog backlog;
        private OutboxDeadLetters deadLetters;
        private Tags tags = Tags.empty();

        private Builder(MeterRegistry registry) {
            this.registry = Objects.requireNonNull(registry, "registry");
        }

        /** Adds the gauges {@code outbox.backlog.events} and {@code outbox.oldest.pending.age.seconds}, read from {@code backlog}. */
        public Builder backlog(OutboxBacklog backlog) {
            this.backlog = Objects.requireNonNull(backlog, "backlog");
            return this;
        }

        /** Adds the gauge {@code outbox.dead.letters}, read from {@code deadLetters}. */
        public Builder deadLetters(OutboxDeadLetters deadLetters) {
            this.deadLetters = Objects.requireNonNull(deadLetters, "deadLetters");
            return this;
        }

        /**
         * Tags on every meter, e.g. {@code Tags.of("outbox", "payments")}, to tell apart the relays of
         * several schemas in one registry: without them a second binding's counts add to the first
         * one's, and its gauges are ignored (Micrometer keeps the first gauge of a name).
         */
        public Builder tags(Iterable<Tag> tags) {
            this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
            return this;
        }

        /** Registers the meters and returns the listener to hand to the relay. */
        public MicrometerRelayMetrics build() {
            return new MicrometerRelayMetrics(this);
        }
    }
}

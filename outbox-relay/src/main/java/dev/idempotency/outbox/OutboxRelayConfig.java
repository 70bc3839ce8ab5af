package dev.idempotency.outbox;

import dev.idempotency.core.internal.SchemaNames;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;

/**
 * Immutable, validated settings of an {@link OutboxRelay}. Build with {@link #builder()}; invalid
 * values fail at {@link Builder#build()} with a message naming the setting, not at the first batch.
 *
 * <p>Every relay on one database must use the same {@link #partitions()}; the other settings may
 * differ between instances.
 */
public final class OutboxRelayConfig {
    /** Lower-case SQL identifiers only, so a schema name never needs more than plain double quotes. */
    private static final int MAX_INSTANCE_ID_LENGTH = 200;

    private final String schema;
    private final String instanceId;
    private final int partitions;
    private final int batchSize;
    private final int maxEventsPerKey;
    private final Duration leaseDuration;
    private final Duration renewalInterval;
    private final Duration publishTimeout;
    private final boolean publishTimeoutSet;
    private final Duration idlePollMin;
    private final Duration idlePollMax;
    private final Duration linger;
    private final Duration positionWriteInterval;
    private final int maxAttempts;
    private final Duration backoffBase;
    private final Duration backoffMax;
    private final boolean readAhead;

    private OutboxRelayConfig(Builder b) {
        this.schema = b.schema;
        this.instanceId = b.instanceId;
        this.partitions = b.partitions;
        this.batchSize = b.batchSize;
        this.maxEventsPerKey = b.maxEventsPerKey;
        this.leaseDuration = b.leaseDuration;
        this.renewalInterval = b.renewalInterval;
        this.publishTimeout = b.publishTimeout;
        this.publishTimeoutSet = b.publishTimeoutSet;
        this.idlePollMin = b.idlePollMin;
        this.idlePollMax = b.idlePollMax;
        this.linger = b.linger;
        this.positionWriteInterval = b.positionWriteInterval;
        this.maxAttempts = b.maxAttempts;
        this.backoffBase = b.backoffBase;
        this.backoffMax = b.backoffMax;
        this.readAhead = b.readAhead;
    }

    /** A builder holding the defaults; each setter says its default and its bounds. */
    public static Builder builder() {
        return new Builder();
    }

    /** The schema holding the outbox and relay tables (the one the migrations were applied to). */
    public String schema() {
        return schema;
    }

    /** This relay's name in the lease tables; unique per running relay. */
    public String instanceId() {
        return instanceId;
    }

    /** Number of virtual partitions the outbox is split into; the same for every relay on the database. */
    public int partitions() {
        return partitions;
    }

    /** Most events read, published and recorded as one page (the position is written once per page). */
    public int batchSize() {
        return batchSize;
    }

    /**
     * Most events of one ordering key in one page: a page is cut before the event that would exceed
     * it, so that its waves (one event per key each, one after another) stay few; the events after the
     * cut come in the next page. Also the most retries of one key published in one retry round.
     */
    public int maxEventsPerKey() {
        return maxEventsPerKey;
    }

    /** How long a partition lease lasts after its last renewal (database clock); bounds how long a dead relay's work waits. */
    public Duration leaseDuration() {
        return leaseDuration;
    }

    /** How often the relay heartbeats, renews its leases and rebalances partitions. */
    public Duration renewalInterval() {
        return renewalInterval;
    }

    /**
     * Longest a single {@code Publisher.publish} call may take; its events are retried after it. For
     * a publisher that declares {@code Publisher.maxCallDuration()} the relay derives this bound from
     * it unless it was set; see {@link #publishTimeoutSet()}.
     */
    public Duration publishTimeout() {
        return publishTimeout;
    }

    /**
     * Whether {@link #publishTimeout()} was set explicitly. If not, a relay whose publisher declares
     * its own limit uses that limit plus a margin; if it was, a relay refuses to start when it is
     * shorter than that, since it would abandon calls that may still deliver.
     */
    public boolean publishTimeoutSet() {
        return publishTimeoutSet;
    }

    /** The same settings with the relay's effective call bound; validated again (lease arithmetic). */
    OutboxRelayConfig withPublishTimeout(Duration effective) {
        Builder copy = new Builder();
        copy.schema = schema;
        copy.instanceId = instanceId;
        copy.partitions = partitions;
        copy.batchSize = batchSize;
        copy.maxEventsPerKey = maxEventsPerKey;
        copy.leaseDuration = leaseDuration;
        copy.renewalInterval = renewalInterval;
        copy.idlePollMin = idlePollMin;
        copy.idlePollMax = idlePollMax;
        copy.linger = linger;
        copy.positionWriteInterval = positionWriteInterval;
        copy.maxAttempts = maxAttempts;
        copy.backoffBase = backoffBase;
        copy.backoffMax = backoffMax;
        copy.readAhead = readAhead;
        return copy.publishTimeout(effective).build();
    }

    /** First wait after a poll found nothing to publish; it doubles while the outbox stays idle. */
    public Duration idlePollMin() {
        return idlePollMin;
    }

    /** Longest wait between polls of an idle outbox (a {@link OutboxRelay#wakeUp()} cuts it short). */
    public Duration idlePollMax() {
        return idlePollMax;
    }

    /**
     * Least time from the start of one read to the next while the relay keeps up with a steady stream
     * (its last page reached the end of what was committed): events gather for a page of several
     * instead of one read per commit, and a {@link OutboxRelay#wakeUp()} does not cut it short. It adds
     * at most this to an event's commit-to-publish time; zero reads again at once. Longer means fewer
     * reads: beside writers that keep the database's CPU busy, 50 ms gave them back what a relay at the
     * default cost them (docs/operations.md, "Latency or the writers' throughput").
     */
    public Duration linger() {
        return linger;
    }

    /**
     * Longest time a relay keeping up with a steady stream goes without writing its positions. A page
     * that ends its batch with every event published moves the positions in memory; they are written
     * once this has passed since the last write, when a read finds nothing new, before partitions are
     * released, and with any event moved to outbox_retries. A crash loses at most the positions of this
     * long: the next owner publishes those events again (at least once; consumers drop them by message
     * id). Zero writes after every page.
     */
    public Duration positionWriteInterval() {
        return positionWriteInterval;
    }

    /** Publish attempts after which a failing event is dead-lettered with its last error. */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** Delay before the first retry; each further retry doubles it (with jitter) up to {@link #backoffMax()}. */
    public Duration backoffBase() {
        return backoffBase;
    }

    /** Longest delay between two attempts of one event. */
    public Duration backoffMax() {
        return backoffMax;
    }

    /**
     * Whether, behind a backlog, the next page is read while the current one is published (on a thread of
     * the relay's own, at most one page ahead, published only if the page before it settled whole under the
     * same leases); off, each page is read after the one before it settled.
     */
    public boolean readAhead() {
        return readAhead;
    }

    /**
     * Time kept free at the end of a lease: the relay stops publishing a partition once less than
     * {@code publishTimeout + leaseSafetyMargin} of its lease is left by the local monotonic clock.
     * It is a tenth of the lease, for clock-rate drift between this host and the database.
     */
    public Duration leaseSafetyMargin() {
        return leaseDuration.dividedBy(10);
    }

    @Override
    public String toString() {
        return "OutboxRelayConfig{schema=" + schema + ", instanceId=" + instanceId + ", partitions=" + partitions
                + ", batchSize=" + batchSize + ", maxEventsPerKey=" + maxEventsPerKey
                + ", leaseDuration=" + leaseDuration + ", renewalInterval=" + renewalInterval
                + ", publishTimeout=" + publishTimeout + ", idlePollMin=" + idlePollMin
                + ", idlePollMax=" + idlePollMax + ", linger=" + linger + ", positionWriteInterval=" + positionWriteInterval
                + ", maxAttempts=" + maxAttempts
                + ", backoffBase=" + backoffBase + ", backoffMax=" + backoffMax + ", readAhead=" + readAhead + "}";
    }

    /** Validates a schema name by the rule the executor's configuration uses; returns it. */
    static String requireValidSchema(String schema) {
        return SchemaNames.require(schema);
    }

    /** Mutable builder for {@link OutboxRelayConfig}. */
    public static final class Builder {
        private String schema = SchemaNames.DEFAULT;
        private String instanceId = "relay-" + UUID.randomUUID();
        private int partitions = 32;
        private int batchSize = 100;
        private int maxEventsPerKey = 10;
        private Duration leaseDuration = Duration.ofSeconds(30);
        private Duration renewalInterval = Duration.ofSeconds(5);
        private Duration publishTimeout = Duration.ofSeconds(10);
        private boolean publishTimeoutSet;
        private Duration idlePollMin = Duration.ofMillis(50);
        private Duration idlePollMax = Duration.ofSeconds(1);
        private Duration linger = Duration.ofMillis(10);
        private Duration positionWriteInterval = Duration.ofMillis(100);
        private int maxAttempts = 20;
        private Duration backoffBase = Duration.ofSeconds(1);
        private Duration backoffMax = Duration.ofMinutes(5);
        private boolean readAhead;

        private Builder() {
        }

        /** The schema the migrations were applied to; default {@code idempotency}. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /** This relay's unique name (e.g. the pod name); default {@code relay-<random UUID>}. At most 200 characters. */
        public Builder instanceId(String instanceId) {
            this.instanceId = instanceId;
            return this;
        }

        /** Virtual partitions, 1 to 4096; default 32. Must match every other relay on the database. */
        public Builder partitions(int partitions) {
            this.partitions = partitions;
            return this;
        }

        /** Events per page, 1 to 10000; default 100. */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /** Events of one ordering key per page, 1 to batchSize; default 10. */
        public Builder maxEventsPerKey(int maxEventsPerKey) {
            this.maxEventsPerKey = maxEventsPerKey;
            return this;
        }

        /**
         * Partition lease length, at least 1 s; default 30 s. It must exceed
         * {@code renewalInterval + publishTimeout + leaseDuration / 10}, with the relay's effective
         * publish call bound (checked again when the relay is created).
         */
        public Builder leaseDuration(Duration leaseDuration) {
            this.leaseDuration = leaseDuration;
            return this;
        }

        /** Heartbeat and lease renewal period, at least 10 ms; default 5 s. */
        public Builder renewalInterval(Duration renewalInterval) {
            this.renewalInterval = renewalInterval;
            return this;
        }

        /**
         * Longest publish call, at least 1 ms. Default: derived from the publisher's own limit
         * ({@code Publisher.maxCallDuration()} plus a margin), or 10 s for a publisher that declares
         * none. When set, it must not be shorter than the derived bound: the relay refuses to start.
         */
        public Builder publishTimeout(Duration publishTimeout) {
            this.publishTimeout = publishTimeout;
            this.publishTimeoutSet = true;
            return this;
        }

        /** First idle wait, at least 1 ms; default 50 ms. */
        public Builder idlePollMin(Duration idlePollMin) {
            this.idlePollMin = idlePollMin;
            return this;
        }

        /** Longest idle wait, at least idlePollMin and at most 1 hour; default 1 s. */
        public Builder idlePollMax(Duration idlePollMax) {
            this.idlePollMax = idlePollMax;
            return this;
        }

        /**
         * Least time between the starts of two reads while the relay keeps up, 0 to 1 s; default 10 ms.
         * It caps the reads per second under a steady stream (each read and position write costs the
         * database the same whether it carries one event or a hundred); 0 reads again at once.
         */
        public Builder linger(Duration linger) {
            this.linger = linger;
            return this;
        }

        /**
         * Longest time between position writes while the relay keeps up, 0 to 10 s and less than the
         * lease; default 100 ms. Each write updates every partition row it moved; what a crash costs is
         * a republication of at most this long of the stream. 0 writes after every page.
         */
        public Builder positionWriteInterval(Duration positionWriteInterval) {
            this.positionWriteInterval = positionWriteInterval;
            return this;
        }

        /** Attempts before dead-lettering, 1 to 1000; default 20. */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /** First retry delay, at least 1 ms; default 1 s. */
        public Builder backoffBase(Duration backoffBase) {
            this.backoffBase = backoffBase;
            return this;
        }

        /** Largest retry delay, at least backoffBase and at most 7 days; default 5 minutes. */
        public Builder backoffMax(Duration backoffMax) {
            this.backoffMax = backoffMax;
            return this;
        }

        /**
         * Whether the next page is read while the current one is published, behind a backlog; default false.
         * On, the read and the publish overlap: worth it where both wait on the network (a relay apart from
         * PostgreSQL and its broker, a slow webhook); where PostgreSQL, the broker and the relay share a few
         * cores it can cost more than it gains (docs/performance.md). The guarantees are the same either way.
         */
        public Builder readAhead(boolean readAhead) {
            this.readAhead = readAhead;
            return this;
        }

        /** Validates and freezes the settings. */
        public OutboxRelayConfig build() {
            requireValidSchema(schema);
            if (instanceId == null || instanceId.isBlank() || instanceId.length() > MAX_INSTANCE_ID_LENGTH
                    || instanceId.chars().anyMatch(Character::isISOControl)) {
                throw new IllegalArgumentException("instanceId must be non-blank, at most " + MAX_INSTANCE_ID_LENGTH
                        + " characters, without control characters (was " + instanceId + ")");
            }
            requireBetween("partitions", partitions, 1, 4096);
            requireBetween("batchSize", batchSize, 1, 10_000);
            requireBetween("maxEventsPerKey", maxEventsPerKey, 1, batchSize);
            requireBetween("maxAttempts", maxAttempts, 1, 1000);
            requireBetween("leaseDuration", leaseDuration, Duration.ofSeconds(1), Duration.ofHours(1));
            requireBetween("renewalInterval", renewalInterval, Duration.ofMillis(10), Duration.ofHours(1));
            requireBetween("publishTimeout", publishTimeout, Duration.ofMillis(1), Duration.ofHours(1));
            requireBetween("idlePollMin", idlePollMin, Duration.ofMillis(1), Duration.ofHours(1));
            requireBetween("idlePollMax", idlePollMax, idlePollMin, Duration.ofHours(1));
            requireBetween("linger", linger, Duration.ZERO, Duration.ofSeconds(1));
            requireBetween("positionWriteInterval", positionWriteInterval, Duration.ZERO, Duration.ofSeconds(10));
            if (positionWriteInterval.compareTo(leaseDuration) >= 0) {
                throw new IllegalArgumentException("positionWriteInterval (" + positionWriteInterval + ") must be shorter than"
                        + " leaseDuration (" + leaseDuration + "), so that positions are written under the lease they were read with");
            }
            requireBetween("backoffBase", backoffBase, Duration.ofMillis(1), Duration.ofDays(7));
            requireBetween("backoffMax", backoffMax, backoffBase, Duration.ofDays(7));
            Duration needed = renewalInterval.plus(publishTimeout).plus(leaseDuration.dividedBy(10));
            // Unset, the bound comes from the publisher: the relay checks it when it is created.
            if (publishTimeoutSet && needed.compareTo(leaseDuration) > 0) {
                throw new IllegalArgumentException("leaseDuration (" + leaseDuration + ") must be at least renewalInterval ("
                        + renewalInterval + ") + publishTimeout (" + publishTimeout + ") + a tenth of itself, so that"
                        + " a publish call started under a renewed lease ends before the lease can lapse");
            }
            return new OutboxRelayConfig(this);
        }

        private static void requireBetween(String name, int value, int min, int max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + " (was " + value + ")");
            }
        }

        private static void requireBetween(String name, Duration value, Duration min, Duration max) {
            Objects.requireNonNull(value, name);
            if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + " (was " + value + ")");
            }
        }
    }
}

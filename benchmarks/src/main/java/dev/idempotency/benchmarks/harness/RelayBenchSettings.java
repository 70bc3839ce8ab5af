package dev.idempotency.benchmarks.harness;

import java.net.URI;
import java.util.List;

/**
 * Validated, immutable settings of the relay sections (5 to 7, 9 and 14) and the consumers section (15):
 * backlog sizes, how the relays are tuned, the latency section's rate, the consumers' messages per cell
 * and where the brokers are. Invalid values fail at {@link Builder#build()}
 * with a message naming the setting.
 */
public final class RelayBenchSettings {
    /** Relay instances of the throughput section, each with a pool of this many connections (the relay uses at most two). */
    public static final int RELAY_POOL_SIZE = 3;
    /** The brokers section 14 knows, in its order. */
    public static final List<String> BROKERS = List.of("jetstream", "rabbitmq", "kafka");

    private final int events;
    private final int peerEvents;
    private final int costEvents;
    private final int partitionKeys;
    private final int batchSize;
    private final int eventsPerKey;
    private final int partitions;
    private final Integer lingerMillis;
    private final int latencyRate;
    private final String natsUrl;
    private final int brokerEvents;
    private final String rabbitMqUrl;
    private final List<String> brokers;
    private final int consumerMessages;

    private RelayBenchSettings(Builder b) {
        this.events = b.events;
        this.peerEvents = b.peerEvents;
        this.costEvents = b.costEvents;
        this.partitionKeys = b.partitionKeys;
        this.batchSize = b.batchSize;
        this.eventsPerKey = b.eventsPerKey;
        this.partitions = b.partitions;
        this.lingerMillis = b.lingerMillis;
        this.latencyRate = b.latencyRate;
        this.natsUrl = b.natsUrl;
        this.brokerEvents = b.brokerEvents;
        this.rabbitMqUrl = b.rabbitMqUrl;
        this.brokers = List.copyOf(b.brokers);
        this.consumerMessages = b.consumerMessages;
    }

    static Builder builder() {
        return new Builder();
    }

    /** The backlog each throughput cell drains (section 5). */
    public int events() {
        return events;
    }

    /** The backlog the peer and ours each drain in section 7. */
    public int peerEvents() {
        return peerEvents;
    }

    /** The backlog whose drain section 9 measures the WAL and dead tuples of. */
    public int costEvents() {
        return costEvents;
    }

    /** Distinct partition keys the backlog is spread over. */
    public int partitionKeys() {
        return partitionKeys;
    }

    /** The relays' batch size. */
    public int batchSize() {
        return batchSize;
    }

    /** The relays' events of one key per batch. */
    public int eventsPerKey() {
        return eventsPerKey;
    }

    /** The relays' virtual partitions. */
    public int partitions() {
        return partitions;
    }

    /** The relays' linger in milliseconds, or null for the library's default. */
    public Integer lingerMillis() {
        return lingerMillis;
    }

    /** Events per second the latency section commits, paced open-loop. */
    public int latencyRate() {
        return latencyRate;
    }

    /** The NATS server with JetStream of sections 5 and 14. */
    public String natsUrl() {
        return natsUrl;
    }

    /** The events the relay drains to each broker, and the broker's own client publishes, in section 14. */
    public int brokerEvents() {
        return brokerEvents;
    }

    /** The RabbitMQ of section 14, as an {@code amqp://user:password@host:port} URL. */
    public String rabbitMqUrl() {
        return rabbitMqUrl;
    }

    /** The brokers section 14 measures, in its order: some of {@link #BROKERS}. */
    public List<String> brokers() {
        return brokers;
    }

    /** The most messages a consumers cell consumes, timed (section 15). */
    public int consumerMessages() {
        return consumerMessages;
    }

    /** Mutable builder for {@link RelayBenchSettings}, with the program's defaults. */
    static final class Builder {
        private int events = 1_000_000;
        private int peerEvents = 100_000;
        private int costEvents = 200_000;
        private int partitionKeys = 10_000;
        private int batchSize = 1_000;
        private int eventsPerKey = 10;
        private int partitions = 32;
        private Integer lingerMillis;
        private int latencyRate = 2_000;
        private String natsUrl = "nats://127.0.0.1:4222";
        private int brokerEvents = 100_000;
        private String rabbitMqUrl = "amqp://guest:guest@127.0.0.1:5672";
        private List<String> brokers = BROKERS;
        private int consumerMessages = 100_000;

        private Builder() {
        }

        public Builder consumerMessages(int consumerMessages) {
            this.consumerMessages = consumerMessages;
            return this;
        }

        public Builder events(int events) {
            this.events = events;
            return this;
        }

        public Builder peerEvents(int peerEvents) {
            this.peerEvents = peerEvents;
            return this;
        }

        public Builder costEvents(int costEvents) {
            this.costEvents = costEvents;
            return this;
        }

        public Builder partitionKeys(int partitionKeys) {
            this.partitionKeys = partitionKeys;
            return this;
        }

        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        public Builder eventsPerKey(int eventsPerKey) {
            this.eventsPerKey = eventsPerKey;
            return this;
        }

        public Builder partitions(int partitions) {
            this.partitions = partitions;
            return this;
        }

        /** Null keeps the library's default. */
        public Builder lingerMillis(Integer lingerMillis) {
            this.lingerMillis = lingerMillis;
            return this;
        }

        public Builder latencyRate(int latencyRate) {
            this.latencyRate = latencyRate;
            return this;
        }

        public Builder natsUrl(String natsUrl) {
            this.natsUrl = natsUrl;
            return this;
        }

        public Builder brokerEvents(int brokerEvents) {
            this.brokerEvents = brokerEvents;
            return this;
        }

        public Builder rabbitMqUrl(String rabbitMqUrl) {
            this.rabbitMqUrl = rabbitMqUrl;
            return this;
        }

        public Builder brokers(List<String> brokers) {
            this.brokers = brokers;
            return this;
        }

        RelayBenchSettings build() {
            requireBetween("relayEvents", events, 1, 100_000_000);
            requireBetween("peerEvents", peerEvents, 1, 10_000_000);
            requireBetween("relayCostEvents", costEvents, 1, 100_000_000);
            requireBetween("relayKeys", partitionKeys, 1, 10_000_000);
            requireBetween("relayBatchSize", batchSize, 1, 10_000);
            requireBetween("relayEventsPerKey", eventsPerKey, 1, batchSize);
            requireBetween("relayPartitions", partitions, 1, 4096);
            if (lingerMillis != null) {
                requireBetween("relayLingerMs", lingerMillis, 0, 1_000);
            }
            requireBetween("latencyRate", latencyRate, 1, 100_000);
            requireBetween("consumerMessages", consumerMessages, 1, 10_000_000);
            URI nats;
            try {
                nats = URI.create(natsUrl == null ? "" : natsUrl);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("natsUrl must be a URL like nats://127.0.0.1:4222 (was " + natsUrl + ")", e);
            }
            if (!"nats".equals(nats.getScheme()) || nats.getHost() == null) {
                throw new IllegalArgumentException("natsUrl must be a URL like nats://127.0.0.1:4222 (was " + natsUrl + ")");
            }
            requireBetween("brokerEvents", brokerEvents, 1, 10_000_000);
            URI rabbitMq;
            try {
                rabbitMq = URI.create(rabbitMqUrl == null ? "" : rabbitMqUrl);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("rabbitMqUrl must be a URL like amqp://guest:guest@127.0.0.1:5672 (was "
                        + rabbitMqUrl + ")", e);
            }
            if (!"amqp".equals(rabbitMq.getScheme()) || rabbitMq.getHost() == null) {
                throw new IllegalArgumentException("rabbitMqUrl must be a URL like amqp://guest:guest@127.0.0.1:5672 (was "
                        + rabbitMqUrl + ")");
            }
            if (brokers == null || brokers.isEmpty() || !BROKERS.containsAll(brokers)) {
                throw new IllegalArgumentException("brokers must name some of " + BROKERS + " (was " + brokers + ")");
            }
            brokers = BROKERS.stream().filter(brokers::contains).toList();
            return new RelayBenchSettings(this);
        }

        private static void requireBetween(String name, int value, int min, int max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + " (was " + value + ")");
            }
        }
    }
}

package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Immutable, validated settings of a {@link KafkaPublisher}, made by {@link #builder()};
 * invalid values fail at build time with a message naming the field, not at the first publish.
 */
public final class KafkaPublisherConfig {
    /** Settings key of {@link #bootstrapServers()}, required in string settings. */
    public static final String BOOTSTRAP_SERVERS_SETTING = "bootstrap-servers";
    /** Settings key of {@link #clientId()}. */
    public static final String CLIENT_ID_SETTING = "client-id";
    /** Settings key of {@link #topicPrefix()}. */
    public static final String TOPIC_PREFIX_SETTING = "topic-prefix";
    /** Settings key of {@link #publishTimeout()}. */
    public static final String PUBLISH_TIMEOUT_SETTING = "publish-timeout";
    /** A settings key starting with this passes the rest of the key to the producer: {@code producer.linger.ms}. */
    public static final String PRODUCER_SETTING_PREFIX = "producer.";

    /** Kafka's own rule for topic names: legal characters and at most 249 of them. */
    static final Pattern TOPIC_NAME = Pattern.compile("[a-zA-Z0-9._-]{1,249}");
    /** Legal characters of a topic prefix; its length is checked against {@link #TOPIC_NAME}. */
    private static final Pattern TOPIC_PREFIX = Pattern.compile("[a-zA-Z0-9._-]*");
    /** Durations in settings strings: a whole number and a unit. */
    private static final Duration MIN_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);
    /** Kafka's default request timeout, used unless the timeout leaves less room. */
    private static final int DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

    /**
     * Producer settings the publisher owns: the idempotent, acks=all, key-partitioned producer and its
     * timeouts are what its results promise, so extra properties may not change them.
     */
    private static final Set<String> RESERVED_PROPERTIES = Set.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            ProducerConfig.CLIENT_ID_CONFIG,
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            ProducerConfig.ACKS_CONFIG,
            ProducerConfig.RETRIES_CONFIG,
            ProducerConfig.MAX_BLOCK_MS_CONFIG,
            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
            ProducerConfig.TRANSACTIONAL_ID_CONFIG,
            ProducerConfig.PARTITIONER_CLASS_CONFIG,
            ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG);

    private final String bootstrapServers;
    private final String clientId;
    private final String topicPrefix;
    private final Duration publishTimeout;
    private final Map<String, String> producerProperties;

    private KafkaPublisherConfig(Builder b) {
        this.bootstrapServers = b.bootstrapServers.strip();
        this.clientId = b.clientId;
        this.topicPrefix = b.topicPrefix;
        this.publishTimeout = b.publishTimeout;
        this.producerProperties = Map.copyOf(b.producerProperties);
    }

    /** A builder with the defaults: client id {@code idempotency-outbox-relay}, no prefix, 15 s timeout. */
    public static Builder builder() {
        return new Builder();
    }

    /** Comma-separated {@code host:port} list of brokers to bootstrap from. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** The producer's client id, as brokers log it and quotas match it. */
    public String clientId() {
        return clientId;
    }

    /** Put in front of each event's topic to name the Kafka topic; empty for none. */
    public String topicPrefix() {
        return topicPrefix;
    }

    /**
     * How long one {@link KafkaPublisher#publish} may take from its start: events not acknowledged by
     * then are reported as RETRY. It is also the producer's delivery timeout.
     */
    public Duration publishTimeout() {
        return publishTimeout;
    }

    /**
     * Half the publish timeout: how long the producer may block one send for metadata or buffer space
     * ({@code max.block.ms}), and the part of a publish in which sends may start, so that a send that
     * blocks to the end still leaves publish within its timeout.
     */
    Duration sendTimeout() {
        return publishTimeout.dividedBy(2);
    }

    /** Extra producer properties (security, compression, batching...), as given. */
    public Map<String, String> producerProperties() {
        return producerProperties;
    }

    /** Mutable builder for {@link KafkaPublisherConfig}. */
    public static final class Builder {
        private String bootstrapServers;
        private String clientId = "idempotency-outbox-relay";
        private String topicPrefix = "";
        // 15 s, like the other publishers' connect + acknowledgement: the relay's default 30 s lease must outlast a call.
        private Duration publishTimeout = Duration.ofSeconds(15);
        private final Map<String, String> producerProperties = new LinkedHashMap<>();

        private Builder() {
        }

        /** Required: comma-separated {@code host:port} pairs. */
        public Builder bootstrapServers(String bootstrapServers) {
            this.bootstrapServers = bootstrapServers;
            return this;
        }

        /** The producer's client id; non-blank. */
        public Builder clientId(String clientId) {
            this.clientId = clientId;
            return this;
        }

        /** Prepended to every event topic, e.g. {@code prod.}; letters, digits, '.', '_' and '-' only. */
        public Builder topicPrefix(String topicPrefix) {
            this.topicPrefix = topicPrefix;
            return this;
        }

        /** How long a publish waits for the whole batch's acknowledgements; 1 s to 10 min. */
        public Builder publishTimeout(Duration publishTimeout) {
            this.publishTimeout = publishTimeout;
            return this;
        }

        /**
         * An extra Kafka producer property, e.g. {@code security.protocol}, {@code compression.type} or
         * {@code linger.ms}. Those that decide delivery guarantees, serialization, partitioning or
         * timeouts are set by the publisher and refused here.
         */
        public Builder producerProperty(String name, String value) {
            producerProperties.put(Objects.requireNonNull(name, "producer property name"),
                    Objects.requireNonNull(value, () -> "value of producer property " + name));
            return this;
        }

        /** Adds each entry as by {@link #producerProperty(String, String)}. */
        public Builder producerProperties(Map<String, String> properties) {
            Objects.requireNonNull(properties, "producerProperties").forEach(this::producerProperty);
            return this;
        }

        /**
         * Reads string settings (the command line's {@code -s NAME=VALUE}, the Spring Boot starter's
         * {@code idempotency.relay.settings.*}) onto this builder, by the names of this class's
         * constants; an {@link IllegalArgumentException} names an unknown setting or a malformed value.
         */
        public Builder settings(Map<String, String> values) {
            PublisherSettings settings = PublisherSettings.of("kafka", values);
            settings.allowOnly(List.of(BOOTSTRAP_SERVERS_SETTING, CLIENT_ID_SETTING, TOPIC_PREFIX_SETTING,
                    PUBLISH_TIMEOUT_SETTING), PRODUCER_SETTING_PREFIX);
            settings.string(BOOTSTRAP_SERVERS_SETTING).ifPresent(this::bootstrapServers);
            settings.string(CLIENT_ID_SETTING).ifPresent(this::clientId);
            settings.string(TOPIC_PREFIX_SETTING).ifPresent(this::topicPrefix);
            settings.duration(PUBLISH_TIMEOUT_SETTING).ifPresent(this::publishTimeout);
            settings.withPrefix(PRODUCER_SETTING_PREFIX).forEach(this::producerProperty);
            return this;
        }

        /** Validates and freezes the settings. */
        public KafkaPublisherConfig build() {
            if (bootstrapServers == null || bootstrapServers.isBlank()) {
                throw new IllegalArgumentException("bootstrapServers is required (host:port[,host:port...])");
            }
            for (String server : bootstrapServers.strip().split(",", -1)) {
                if (!server.strip().matches("\\S+:\\d{1,5}")) {
                    throw new IllegalArgumentException("bootstrapServers must be host:port pairs separated by commas"
                            + " (was " + bootstrapServers + ")");
                }
                SettingChecks.requireHostPort("bootstrapServers", server);
            }
            SettingChecks.requireText("clientId", clientId);
            if (topicPrefix == null || !TOPIC_PREFIX.matcher(topicPrefix).matches() || topicPrefix.length() >= 249) {
                throw new IllegalArgumentException("topicPrefix may hold only letters, digits, '.', '_' and '-'"
                        + " and must be shorter than 249 characters (was " + topicPrefix + ")");
            }
            SettingChecks.requireBetween("publishTimeout", publishTimeout, MIN_TIMEOUT, MAX_TIMEOUT);
            for (String name : producerProperties.keySet()) {
                if (RESERVED_PROPERTIES.contains(name)) {
                    throw new IllegalArgumentException("producer property " + name + " is set by KafkaPublisher"
                            + " (idempotent, acks=all, keyed partitions, timeouts from publishTimeout)"
                            + " and cannot be overridden");
                }
            }
            KafkaPublisherConfig config = new KafkaPublisherConfig(this);
            config.producerSettings(); // fails now on values the producer would refuse at creation
            return config;
        }
    }

    /**
     * The complete producer configuration: the extra properties, then the ones the publisher owns.
     * Validates value types and the timeout arithmetic the producer itself would reject later.
     */
    Map<String, Object> producerSettings() {
        Map<String, Object> settings = new LinkedHashMap<>(producerProperties);
        int timeoutMs = Math.toIntExact(publishTimeout.toMillis());
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        settings.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        settings.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        settings.put(ProducerConfig.ACKS_CONFIG, "all");
        settings.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, sendTimeout().toMillis());
        settings.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, timeoutMs);

        Map<String, Object> parsed;
        try {
            parsed = ProducerConfig.configDef().parse(settings);
        } catch (ConfigException e) {
            throw new IllegalArgumentException("invalid producer property: " + e.getMessage(), e);
        }
        long lingerMs = ((Number) parsed.get(ProducerConfig.LINGER_MS_CONFIG)).longValue();
        if (lingerMs >= timeoutMs) {
            throw new IllegalArgumentException("producer property linger.ms (" + lingerMs
                    + ") must be less than publishTimeout (" + timeoutMs + " ms)");
        }
        if (settings.containsKey(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG)) {
            long requestTimeoutMs = ((Number) parsed.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG)).longValue();
            if (lingerMs + requestTimeoutMs > timeoutMs) {
                throw new IllegalArgumentException("producer properties linger.ms + request.timeout.ms ("
                        + (lingerMs + requestTimeoutMs) + " ms) must not exceed publishTimeout (" + timeoutMs + " ms)");
            }
        } else {
            // The producer refuses a delivery timeout shorter than linger + request timeout.
            long requestTimeoutMs = Math.min(DEFAULT_REQUEST_TIMEOUT_MS, timeoutMs - lingerMs);
            settings.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) requestTimeoutMs);
        }
        long maxInFlight = ((Number) parsed.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION)).longValue();
        if (maxInFlight > 5) {
            throw new IllegalArgumentException("producer property max.in.flight.requests.per.connection must be"
                    + " at most 5 for the idempotent producer to keep per-key order (was " + maxInFlight + ")");
        }
        return settings;
    }
}

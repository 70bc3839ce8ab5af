package dev.idempotency.core;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.idempotency.core.internal.SchemaNames;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;

/**
 * Immutable, validated settings of an executor. Build with {@link #builder()}; invalid values fail
 * at {@link Builder#build()}, not at the first request.
 */
public final class IdempotencyConfig {
    private final String schema;
    private final Duration retention;
    private final Duration waitBudget;
    private final int maxResultBytes;
    private final int maxOutboxPayloadBytes;
    private final ObjectMapper objectMapper;
    private final Set<Class<?>> allowedResultTypes;

    private IdempotencyConfig(Builder b) {
        this.schema = b.schema;
        this.retention = b.retention;
        this.waitBudget = b.waitBudget;
        this.maxResultBytes = b.maxResultBytes;
        this.maxOutboxPayloadBytes = b.maxOutboxPayloadBytes;
        this.objectMapper = b.objectMapper.copy();
        this.allowedResultTypes = Set.copyOf(b.allowedResultTypes);
    }

    /** A builder holding the defaults: schema {@code idempotency}, 24 h retention, 5 s wait budget. */
    public static Builder builder() {
        return new Builder();
    }

    /** The defaults, unchanged. */
    public static IdempotencyConfig defaults() {
        return builder().build();
    }

    /** The schema holding the keys and outbox tables. */
    public String schema() {
        return schema;
    }

    /**
     * How long a key and its outcome are kept after the key is first claimed. Settled outcomes
     * (completed, or a known failure) are replayed until then and purged after; a key under a lease
     * and an unknown outcome ({@code lease_expired}) are kept past it until an operator resolves them.
     */
    public Duration retention() {
        return retention;
    }

    /**
     * The longest lease {@link IdempotentExecutor#runWithLease} accepts: half the {@link #retention()}.
     * A lease must run out well before its key's retention ends, so that a result completed at the
     * end of a lease is still replayed for at least as long again.
     */
    public Duration maxLease() {
        return retention.dividedBy(2);
    }

    /** How long a duplicate waits for a concurrent first call to finish before {@link KeyInProgressException}. */
    public Duration waitBudget() {
        return waitBudget;
    }

    /** Largest stored result, in bytes of JSON; larger results fail with {@link ResultNotStorableException}. */
    public int maxResultBytes() {
        return maxResultBytes;
    }

    /** Largest outbox payload, in bytes of JSON. */
    public int maxOutboxPayloadBytes() {
        return maxOutboxPayloadBytes;
    }

    /** The mapper for results, failures and payloads (a private copy of the one configured). */
    public ObjectMapper objectMapper() {
        return objectMapper;
    }

    /** Result classes, beyond JSON values and plain Java value types, that a replay may rebuild by name. */
    public Set<Class<?>> allowedResultTypes() {
        return allowedResultTypes;
    }

    /** Mutable builder for {@link IdempotencyConfig}. */
    public static final class Builder {
        private String schema = SchemaNames.DEFAULT;
        private Duration retention = Duration.ofHours(24);
        private Duration waitBudget = Duration.ofSeconds(5);
        private int maxResultBytes = 64 * 1024;
        private int maxOutboxPayloadBytes = 1024 * 1024;
        private ObjectMapper objectMapper = JsonMapper.builder().build();
        private final Set<Class<?>> allowedResultTypes = new LinkedHashSet<>();

        private Builder() {
        }

        /** The schema the migrations were applied to; a lower-case SQL identifier. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /** Key retention; at least one second. */
        public Builder retention(Duration retention) {
            this.retention = retention;
            return this;
        }

        /** How long a concurrent duplicate waits; zero means it fails at once. */
        public Builder waitBudget(Duration waitBudget) {
            this.waitBudget = waitBudget;
            return this;
        }

        /** Largest stored result in bytes of JSON; 1 byte to 64 MiB. */
        public Builder maxResultBytes(int maxResultBytes) {
            this.maxResultBytes = maxResultBytes;
            return this;
        }

        /** Largest outbox payload in bytes of JSON; 1 byte to 64 MiB. */
        public Builder maxOutboxPayloadBytes(int maxOutboxPayloadBytes) {
            this.maxOutboxPayloadBytes = maxOutboxPayloadBytes;
            return this;
        }

        /** The Jackson mapper for results, failures and payloads (copied at build time). */
        public Builder objectMapper(ObjectMapper objectMapper) {
            this.objectMapper = objectMapper;
            return this;
        }

        /**
         * Lets {@link IdempotentExecutor#run(String, String, IdempotentCallback)} replay results of
         * these exact classes. Replays rebuild a result by its stored class name, so only classes
         * named here (and JSON values, {@code String}, boxed primitives, {@code BigDecimal},
         * {@code BigInteger}, {@code UUID}, {@code Map} and {@code List}) are accepted; a first run
         * returning anything else fails before commit. The overloads taking a result type need no entry.
         */
        public Builder allowResultTypes(Class<?>... types) {
            for (Class<?> type : types) {
                allowedResultTypes.add(Objects.requireNonNull(type, "result type"));
            }
            return this;
        }

        /** Validates and freezes the settings. */
        public IdempotencyConfig build() {
            SchemaNames.require(schema);
            requirePositive("retention", retention, Duration.ofSeconds(1));
            Objects.requireNonNull(waitBudget, "waitBudget");
            if (waitBudget.isNegative() || waitBudget.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("waitBudget must be between 0 and 1 hour (was " + waitBudget + ")");
            }
            requireSize("maxResultBytes", maxResultBytes);
            requireSize("maxOutboxPayloadBytes", maxOutboxPayloadBytes);
            Objects.requireNonNull(objectMapper, "objectMapper");
            return new IdempotencyConfig(this);
        }

        private static void requirePositive(String name, Duration value, Duration min) {
            Objects.requireNonNull(value, name);
            if (value.compareTo(min) < 0) {
                throw new IllegalArgumentException(name + " must be at least " + min + " (was " + value + ")");
            }
        }

        private static void requireSize(String name, int value) {
            if (value < 1 || value > 64 * 1024 * 1024) {
                throw new IllegalArgumentException(name + " must be between 1 and 67108864 bytes (was " + value + ")");
            }
        }
    }
}

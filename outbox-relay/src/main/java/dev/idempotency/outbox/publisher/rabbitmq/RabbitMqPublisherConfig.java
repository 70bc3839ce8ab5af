package dev.idempotency.outbox.publisher.rabbitmq;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Where and how {@link RabbitMqPublisher} publishes. Immutable; made by {@link #builder()}, whose
 * {@code build()} validates every field once and names the field it refuses.
 *
 * <p>Each event is published to {@link #exchange()} with its topic as the routing key. The default
 * exchange {@code ""} delivers straight to the queue named like the topic; name a direct or topic
 * exchange to route by bindings instead.
 */
public final class RabbitMqPublisherConfig {
    /** Setting: the broker host, {@code localhost} by default. */
    public static final String HOST = "host";
    /** Setting: the broker port, 5672 by default (5671 with TLS). */
    public static final String PORT = "port";
    /** Setting: the virtual host, {@code /} by default. */
    public static final String VIRTUAL_HOST = "virtual-host";
    /** Setting: the user name, {@code guest} by default. */
    public static final String USERNAME = "username";
    /** Setting: the password, {@code guest} by default. */
    public static final String PASSWORD = "password";
    /** Setting: whether to connect with TLS, checking the broker's certificate and host name; false by default. */
    public static final String TLS = "tls";
    /** Setting: the exchange to publish to, {@code ""} (the default exchange) by default. */
    public static final String EXCHANGE = "exchange";
    /** Setting: whether an event no queue receives is retried (true, the default) or counted as published. */
    public static final String MANDATORY = "mandatory";
    /** Setting: how long connecting may take, 5s by default. */
    public static final String CONNECT_TIMEOUT = "connect-timeout";
    /** Setting: how long a batch may wait for its publisher confirms, 10s by default. */
    public static final String CONFIRM_TIMEOUT = "confirm-timeout";
    /** Setting: the connection name shown in the management UI, {@code idempotency-outbox-relay} by default. */
    public static final String CONNECTION_NAME = "connection-name";

    /** AMQP short strings (exchange names, routing keys) hold at most 255 bytes. */
    static final int MAX_SHORT_STRING_BYTES = 255;

    private final String host;
    private final int port;
    private final String virtualHost;
    private final String username;
    private final String password;
    private final boolean tls;
    private final String exchange;
    private final boolean mandatory;
    private final Duration connectTimeout;
    private final Duration confirmTimeout;
    private final String connectionName;

    private RabbitMqPublisherConfig(Builder builder, int port) {
        this.host = builder.host;
        this.port = port;
        this.virtualHost = builder.virtualHost;
        this.username = builder.username;
        this.password = builder.password;
        this.tls = builder.tls;
        this.exchange = builder.exchange;
        this.mandatory = builder.mandatory;
        this.connectTimeout = builder.connectTimeout;
        this.confirmTimeout = builder.confirmTimeout;
        this.connectionName = builder.connectionName;
    }

    /** A builder with the defaults: guest@localhost:5672, vhost /, the default exchange, mandatory. */
    public static Builder builder() {
        return new Builder();
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    public String virtualHost() {
        return virtualHost;
    }

    public String username() {
        return username;
    }

    public String password() {
        return password;
    }

    /** Whether the connection uses TLS with certificate and host-name checks. */
    public boolean tls() {
        return tls;
    }

    /** The exchange events are published to; {@code ""} is the default exchange. */
    public String exchange() {
        return exchange;
    }

    /** Whether an event that no queue receives is retried (true) or silently counted as published. */
    public boolean mandatory() {
        return mandatory;
    }

    /** How long opening the connection (TCP, TLS and AMQP handshake) may take. */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** How long one batch may take to write and wait for its publisher confirms. */
    public Duration confirmTimeout() {
        return confirmTimeout;
    }

    /** The client-provided connection name the broker shows. */
    public String connectionName() {
        return connectionName;
    }

    /** The password is left out. */
    @Override
    public String toString() {
        return "RabbitMqPublisherConfig{" + (tls ? "amqps://" : "amqp://") + username + "@" + host + ":" + port
                + ", virtualHost=" + virtualHost + ", exchange='" + exchange + "', mandatory=" + mandatory
                + ", connectTimeout=" + connectTimeout + ", confirmTimeout=" + confirmTimeout
                + ", connectionName=" + connectionName + "}";
    }

    /** Collects the settings of a {@link RabbitMqPublisherConfig}; {@link #build()} validates them. */
    public static final class Builder {
        private String host = "localhost";
        private Integer port;
        private String virtualHost = "/";
        private String username = "guest";
        private String password = "guest";
        private boolean tls;
        private String exchange = "";
        private boolean mandatory = true;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration confirmTimeout = Duration.ofSeconds(10);
        private String connectionName = "idempotency-outbox-relay";

        private Builder() {
        }

        /** The broker host (default {@code localhost}). */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /** The broker port; unset means 5672, or 5671 with TLS. */
        public Builder port(int port) {
            this.port = port;
            return this;
        }

        /** The virtual host (default {@code /}). */
        public Builder virtualHost(String virtualHost) {
            this.virtualHost = virtualHost;
            return this;
        }

        /** The user name (default {@code guest}). */
        public Builder username(String username) {
            this.username = username;
            return this;
        }

        /** The password (default {@code guest}). */
        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** Connect with TLS, trusting the JVM's default trust store and checking the host name. */
        public Builder tls(boolean tls) {
            this.tls = tls;
            return this;
        }

        /** The exchange to publish to; {@code ""} (default) routes to the queue named like the topic. */
        public Builder exchange(String exchange) {
            this.exchange = exchange;
            return this;
        }

        /**
         * True (default): an event that no queue receives is returned by the broker and reported
         * RETRY, so nothing is dropped while a queue is missing. False: such an event counts as
         * published and the broker drops it.
         */
        public Builder mandatory(boolean mandatory) {
            this.mandatory = mandatory;
            return this;
        }

        /** How long opening the connection (TCP, TLS and AMQP handshake) may take (default 5s). */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /** How long one batch may take to write and be confirmed (default 10s); later confirms count as RETRY. */
        public Builder confirmTimeout(Duration confirmTimeout) {
            this.confirmTimeout = confirmTimeout;
            return this;
        }

        /** The connection name the broker shows (default {@code idempotency-outbox-relay}). */
        public Builder connectionName(String connectionName) {
            this.connectionName = connectionName;
            return this;
        }

        /**
         * Reads string settings (the command line's {@code -s NAME=VALUE}, the Spring Boot starter's
         * {@code idempotency.relay.settings.*}) onto this builder, by the names of this class's
         * constants; an {@link IllegalArgumentException} names an unknown setting or a malformed value.
         */
        public Builder settings(Map<String, String> values) {
            PublisherSettings settings = PublisherSettings.of("rabbitmq", values);
            settings.allowOnly(List.of(HOST, PORT, VIRTUAL_HOST, USERNAME, PASSWORD, TLS, EXCHANGE, MANDATORY,
                    CONNECT_TIMEOUT, CONFIRM_TIMEOUT, CONNECTION_NAME));
            settings.string(HOST).ifPresent(this::host);
            settings.integer(PORT).ifPresent(this::port);
            settings.string(VIRTUAL_HOST).ifPresent(this::virtualHost);
            settings.string(USERNAME).ifPresent(this::username);
            settings.string(PASSWORD).ifPresent(this::password);
            settings.bool(TLS).ifPresent(this::tls);
            settings.string(EXCHANGE).ifPresent(this::exchange);
            settings.bool(MANDATORY).ifPresent(this::mandatory);
            settings.duration(CONNECT_TIMEOUT).ifPresent(this::connectTimeout);
            settings.duration(CONFIRM_TIMEOUT).ifPresent(this::confirmTimeout);
            settings.string(CONNECTION_NAME).ifPresent(this::connectionName);
            return this;
        }

        /** Validates the settings; an {@link IllegalArgumentException} names the first bad one. */
        public RabbitMqPublisherConfig build() {
            SettingChecks.requireText("host", host);
            int effectivePort = SettingChecks.requirePort("port", port != null ? port : tls ? 5671 : 5672);
            SettingChecks.requireText("virtualHost", virtualHost);
            SettingChecks.requireText("username", username);
            SettingChecks.requirePresent("password", password);
            if (exchange == null || exchange.getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING_BYTES) {
                throw new IllegalArgumentException("exchange must be a name of at most " + MAX_SHORT_STRING_BYTES
                        + " UTF-8 bytes (\"\" for the default exchange) (was " + exchange + ")");
            }
            SettingChecks.requireMillis("connectTimeout", connectTimeout);
            SettingChecks.requireMillis("confirmTimeout", confirmTimeout);
            SettingChecks.requireText("connectionName", connectionName);
            return new RabbitMqPublisherConfig(this, effectivePort);
        }
    }
}

package dev.idempotency.outbox.publisher.nats;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import io.nats.client.Options;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Where and how {@link NatsJetStreamPublisher} publishes. Immutable; made by {@link #builder()}, whose
 * {@code build()} validates every field once and names the field it refuses.
 *
 * <p>Each event is published to the subject {@link #subjectPrefix()} + topic: with the prefix
 * {@code outbox.}, topic {@code orders} goes to {@code outbox.orders}, and a stream on
 * {@code outbox.>} captures every topic. The default prefix is empty: the subject is the topic.
 * At most one way to authenticate may be set: user and password, a token, or a credentials file.
 */
public final class NatsJetStreamPublisherConfig {
    /** Setting: comma-separated server URLs, {@code nats://localhost:4222} by default. */
    public static final String SERVERS = "servers";
    /** Setting: the user name (with {@value #PASSWORD}). */
    public static final String USERNAME = "username";
    /** Setting: the password (with {@value #USERNAME}). */
    public static final String PASSWORD = "password";
    /** Setting: an authentication token. */
    public static final String TOKEN = "token";
    /** Setting: the path of a {@code .creds} file (JWT and NKey seed). */
    public static final String CREDENTIALS_FILE = "credentials-file";
    /** Setting: what is put before each topic to make the subject, empty by default. */
    public static final String SUBJECT_PREFIX = "subject-prefix";
    /** Setting: how long connecting may take, 5s by default. */
    public static final String CONNECT_TIMEOUT = "connect-timeout";
    /** Setting: how long a batch may wait for its JetStream acks, 10s by default. */
    public static final String ACK_TIMEOUT = "ack-timeout";
    /** Setting: the connection name the server shows, {@code idempotency-outbox-relay} by default. */
    public static final String CONNECTION_NAME = "connection-name";

    private final List<String> servers;
    private final String username;
    private final String password;
    private final String token;
    private final Path credentialsFile;
    private final String subjectPrefix;
    private final Duration connectTimeout;
    private final Duration ackTimeout;
    private final String connectionName;

    private NatsJetStreamPublisherConfig(Builder builder) {
        this.servers = List.copyOf(builder.servers);
        this.username = builder.username;
        this.password = builder.password;
        this.token = builder.token;
        this.credentialsFile = builder.credentialsFile;
        this.subjectPrefix = builder.subjectPrefix;
        this.connectTimeout = builder.connectTimeout;
        this.ackTimeout = builder.ackTimeout;
        this.connectionName = builder.connectionName;
    }

    /** A builder with the defaults: {@code nats://localhost:4222}, no authentication, no subject prefix. */
    public static Builder builder() {
        return new Builder();
    }

    /** The servers to connect to, tried in random order. */
    public List<String> servers() {
        return servers;
    }

    /** The user name, or null. */
    public String username() {
        return username;
    }

    /** The password, or null. */
    public String password() {
        return password;
    }

    /** The authentication token, or null. */
    public String token() {
        return token;
    }

    /** The credentials file, or null. */
    public Path credentialsFile() {
        return credentialsFile;
    }

    /** What is put before each topic to make the subject. */
    public String subjectPrefix() {
        return subjectPrefix;
    }

    /** The subject an event with {@code topic} is published to. */
    public String subjectFor(String topic) {
        return subjectPrefix + topic;
    }

    /** How long connecting may take. */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** How long one batch may wait for its JetStream acks. */
    public Duration ackTimeout() {
        return ackTimeout;
    }

    /** The connection name the server shows. */
    public String connectionName() {
        return connectionName;
    }

    /** Password and token are left out. */
    @Override
    public String toString() {
        String auth = username != null ? "user " + username : token != null ? "token"
                : credentialsFile != null ? "credentials file " + credentialsFile : "none";
        return "NatsJetStreamPublisherConfig{servers=" + servers + ", auth=" + auth + ", subjectPrefix='" + subjectPrefix
                + "', connectTimeout=" + connectTimeout + ", ackTimeout=" + ackTimeout
                + ", connectionName=" + connectionName + "}";
    }

    /** Collects the settings of a {@link NatsJetStreamPublisherConfig}; {@link #build()} validates them. */
    public static final class Builder {
        private List<String> servers = List.of("nats://localhost:4222");
        private String username;
        private String password;
        private String token;
        private Path credentialsFile;
        private String subjectPrefix = "";
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration ackTimeout = Duration.ofSeconds(10);
        private String connectionName = "idempotency-outbox-relay";

        private Builder() {
        }

        /** The server URLs ({@code nats://host:port}, {@code tls://host:port} for TLS). */
        public Builder servers(List<String> servers) {
            this.servers = servers;
            return this;
        }

        /** Authenticate with a user name and password. */
        public Builder userInfo(String username, String password) {
            this.username = username;
            this.password = password;
            return this;
        }

        /** Authenticate with a token. */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /** Authenticate with a {@code .creds} file (JWT and NKey seed). */
        public Builder credentialsFile(Path credentialsFile) {
            this.credentialsFile = credentialsFile;
            return this;
        }

        /** What is put before each topic to make the subject, e.g. {@code outbox.}; empty by default. */
        public Builder subjectPrefix(String subjectPrefix) {
            this.subjectPrefix = subjectPrefix;
            return this;
        }

        /** How long connecting may take (default 5s). */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /** How long one batch may wait for its acks (default 10s); later acks count as RETRY. */
        public Builder ackTimeout(Duration ackTimeout) {
            this.ackTimeout = ackTimeout;
            return this;
        }

        /** The connection name the server shows (default {@code idempotency-outbox-relay}). */
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
            PublisherSettings settings = PublisherSettings.of("nats", values);
            settings.allowOnly(List.of(SERVERS, USERNAME, PASSWORD, TOKEN, CREDENTIALS_FILE, SUBJECT_PREFIX,
                    CONNECT_TIMEOUT, ACK_TIMEOUT, CONNECTION_NAME));
            settings.string(SERVERS).ifPresent(servers -> this.servers(
                    Arrays.stream(servers.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList()));
            if (settings.string(USERNAME).isPresent() || settings.string(PASSWORD).isPresent()) {
                this.userInfo(settings.string(USERNAME).orElse(null), settings.string(PASSWORD).orElse(null));
            }
            settings.string(TOKEN).ifPresent(this::token);
            settings.string(CREDENTIALS_FILE).map(Path::of).ifPresent(this::credentialsFile);
            settings.string(SUBJECT_PREFIX).ifPresent(this::subjectPrefix);
            settings.duration(CONNECT_TIMEOUT).ifPresent(this::connectTimeout);
            settings.duration(ACK_TIMEOUT).ifPresent(this::ackTimeout);
            settings.string(CONNECTION_NAME).ifPresent(this::connectionName);
            return this;
        }

        /** Validates the settings; an {@link IllegalArgumentException} names the first bad one. */
        public NatsJetStreamPublisherConfig build() {
            if (servers == null || servers.isEmpty()) {
                throw new IllegalArgumentException("servers must name at least one server");
            }
            for (String server : servers) {
                try {
                    new Options.Builder().server(server);
                } catch (RuntimeException e) {
                    throw new IllegalArgumentException("servers holds an invalid URL '" + server + "': " + e.getMessage(), e);
                }
            }
            if ((username == null) != (password == null)) {
                throw new IllegalArgumentException("username and password must be set together");
            }
            int ways = (username != null ? 1 : 0) + (token != null ? 1 : 0) + (credentialsFile != null ? 1 : 0);
            if (ways > 1) {
                throw new IllegalArgumentException("set at most one of userInfo, token and credentialsFile");
            }
            if (credentialsFile != null && !Files.isReadable(credentialsFile)) {
                throw new IllegalArgumentException("credentialsFile must be a readable file (was " + credentialsFile + ")");
            }
            if (subjectPrefix == null || !subjectPrefix.chars().allMatch(c -> c > 0x20 && c != 0x7F && c != '*' && c != '>')) {
                throw new IllegalArgumentException("subjectPrefix must hold no whitespace, control characters or"
                        + " wildcards (* >) (was '" + subjectPrefix + "')");
            }
            SettingChecks.requireMillis("connectTimeout", connectTimeout);
            SettingChecks.requireMillis("ackTimeout", ackTimeout);
            SettingChecks.requireText("connectionName", connectionName);
            return new NatsJetStreamPublisherConfig(this);
        }
    }
}

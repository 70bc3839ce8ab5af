package dev.idempotency.outbox.publisher.http;

import dev.idempotency.outbox.publisher.internal.PublisherSettings;
import dev.idempotency.outbox.publisher.internal.SettingChecks;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Where and how {@link HttpWebhookPublisher} posts events. Immutable; made by {@link #builder()}, whose
 * {@code build()} validates every field once and names the field it refuses.
 *
 * <p>Each event is POSTed to {@link #urlFor(String)}: by default the base URL with the topic
 * appended as one percent-encoded path segment ({@code https://hooks.example/outbox} and topic
 * {@code orders created} give {@code https://hooks.example/outbox/orders%20created}); with
 * {@code appendTopicToPath(false)}, to the base URL itself, the topic then travelling only in the
 * {@code Outbox-Topic} header.
 */
public final class HttpWebhookPublisherConfig {
    /** Setting: the base URL (required). */
    public static final String BASE_URL = "base-url";
    /** Setting: whether the topic is appended to the base URL's path, true by default. */
    public static final String APPEND_TOPIC_TO_PATH = "append-topic-to-path";
    /** Setting: how long opening a connection may take, 5s by default. */
    public static final String CONNECT_TIMEOUT = "connect-timeout";
    /** Setting: how long one request may wait for its complete response, 10s by default. */
    public static final String REQUEST_TIMEOUT = "request-timeout";
    /** Setting: how many requests of one batch may be in flight at once, 16 by default. */
    public static final String MAX_CONCURRENT_REQUESTS = "max-concurrent-requests";
    /** Setting prefix: {@code header.Authorization=Bearer ...} adds that header to every request. */
    public static final String HEADER_PREFIX = "header.";

    private static final int MAX_CONCURRENT_REQUESTS_LIMIT = 1000;

    private final URI baseUrl;
    private final boolean appendTopicToPath;
    private final Duration connectTimeout;
    private final Duration requestTimeout;
    private final int maxConcurrentRequests;
    private final Map<String, String> headers;

    private HttpWebhookPublisherConfig(Builder builder, URI baseUrl) {
        this.baseUrl = baseUrl;
        this.appendTopicToPath = builder.appendTopicToPath;
        this.connectTimeout = builder.connectTimeout;
        this.requestTimeout = builder.requestTimeout;
        this.maxConcurrentRequests = builder.maxConcurrentRequests;
        this.headers = Map.copyOf(builder.headers);
    }

    /** A builder with the defaults: topic appended, 5s to connect, 10s per request, 16 in flight. */
    public static Builder builder() {
        return new Builder();
    }

    /** The URL events are posted to, or under. */
    public URI baseUrl() {
        return baseUrl;
    }

    /** Whether the topic is appended to {@link #baseUrl()} as a path segment. */
    public boolean appendTopicToPath() {
        return appendTopicToPath;
    }

    /** How long opening a connection may take. */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** How long one request may wait for its complete response once connected. */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /** How many requests of one batch may be in flight at once. */
    public int maxConcurrentRequests() {
        return maxConcurrentRequests;
    }

    /** Headers added to every request, such as {@code Authorization}. */
    public Map<String, String> headers() {
        return headers;
    }

    /** The URL an event with {@code topic} is posted to. */
    public URI urlFor(String topic) {
        if (!appendTopicToPath) {
            return baseUrl;
        }
        String base = baseUrl.toString();
        return URI.create(base + (base.endsWith("/") ? "" : "/") + pathSegment(topic));
    }

    /** Header values are masked: they often hold credentials. */
    @Override
    public String toString() {
        return "HttpWebhookPublisherConfig{baseUrl=" + baseUrl + ", appendTopicToPath=" + appendTopicToPath
                + ", connectTimeout=" + connectTimeout + ", requestTimeout=" + requestTimeout
                + ", maxConcurrentRequests=" + maxConcurrentRequests + ", headers=" + headers.keySet() + "}";
    }

    /** Percent-encodes all but RFC 3986 unreserved characters, so the topic is exactly one path segment. */
    static String pathSegment(String value) {
        StringBuilder encoded = new StringBuilder(value.length() + 16);
        for (byte raw : value.getBytes(StandardCharsets.UTF_8)) {
            int b = raw & 0xFF;
            boolean unreserved = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
                    || b == '-' || b == '.' || b == '_' || b == '~';
            if (unreserved) {
                encoded.append((char) b);
            } else {
                encoded.append('%').append(Character.toUpperCase(Character.forDigit(b >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(b & 0x0F, 16)));
            }
        }
        return encoded.toString();
    }

    /** Collects the settings of an {@link HttpWebhookPublisherConfig}; {@link #build()} validates them. */
    public static final class Builder {
        private String baseUrl;
        private boolean appendTopicToPath = true;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private int maxConcurrentRequests = 16;
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Builder() {
        }

        /** The absolute http or https URL events are posted to (or under); no user info, no fragment. */
        public Builder baseUrl(String baseUrl) {
            this.baseUrl = baseUrl;
            return this;
        }

        /** Whether the topic is appended as a path segment (default true). */
        public Builder appendTopicToPath(boolean appendTopicToPath) {
            this.appendTopicToPath = appendTopicToPath;
            return this;
        }

        /** How long opening a connection may take (default 5s). */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /** How long one request may wait for its complete response once connected (default 10s). */
        public Builder requestTimeout(Duration requestTimeout) {
            this.requestTimeout = requestTimeout;
            return this;
        }

        /** How many requests of one batch may be in flight at once (default 16). */
        public Builder maxConcurrentRequests(int maxConcurrentRequests) {
            this.maxConcurrentRequests = maxConcurrentRequests;
            return this;
        }

        /** Adds a header to every request, e.g. {@code Authorization}; replaces one of the same name. */
        public Builder header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        /**
         * Reads string settings (the command line's {@code -s NAME=VALUE}, the Spring Boot starter's
         * {@code idempotency.relay.settings.*}) onto this builder, by the names of this class's
         * constants; an {@link IllegalArgumentException} names an unknown setting or a malformed value.
         */
        public Builder settings(Map<String, String> values) {
            PublisherSettings settings = PublisherSettings.of("http", values);
            settings.allowOnly(List.of(BASE_URL, APPEND_TOPIC_TO_PATH, CONNECT_TIMEOUT, REQUEST_TIMEOUT,
                    MAX_CONCURRENT_REQUESTS), HEADER_PREFIX);
            this.baseUrl(settings.required(BASE_URL));
            settings.bool(APPEND_TOPIC_TO_PATH).ifPresent(this::appendTopicToPath);
            settings.duration(CONNECT_TIMEOUT).ifPresent(this::connectTimeout);
            settings.duration(REQUEST_TIMEOUT).ifPresent(this::requestTimeout);
            settings.integer(MAX_CONCURRENT_REQUESTS).ifPresent(this::maxConcurrentRequests);
            settings.withPrefix(HEADER_PREFIX).forEach(this::header);
            return this;
        }

        /** Validates the settings; an {@link IllegalArgumentException} names the first bad one. */
        public HttpWebhookPublisherConfig build() {
            URI url = validBaseUrl();
            SettingChecks.requirePositive("connectTimeout", connectTimeout);
            SettingChecks.requirePositive("requestTimeout", requestTimeout);
            SettingChecks.requireBetween("maxConcurrentRequests", maxConcurrentRequests, 1, MAX_CONCURRENT_REQUESTS_LIMIT);
            headers.forEach(Builder::validateHeader);
            return new HttpWebhookPublisherConfig(this, url);
        }

        private URI validBaseUrl() {
            if (baseUrl == null || baseUrl.isBlank()) {
                throw new IllegalArgumentException("baseUrl is required");
            }
            URI url;
            try {
                url = new URI(baseUrl.strip());
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException("baseUrl is not a valid URL: " + e.getMessage(), e);
            }
            String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
            if (!scheme.equals("http") && !scheme.equals("https") || url.getHost() == null) {
                throw new IllegalArgumentException("baseUrl must be an absolute http or https URL with a host (was '"
                        + baseUrl + "')");
            }
            if (url.getRawUserInfo() != null) {
                throw new IllegalArgumentException("baseUrl must not carry user info; send credentials in a header"
                        + " such as Authorization instead");
            }
            if (url.getRawFragment() != null) {
                throw new IllegalArgumentException("baseUrl must not have a fragment (was '" + baseUrl + "')");
            }
            if (appendTopicToPath && url.getRawQuery() != null) {
                throw new IllegalArgumentException("baseUrl must not have a query when the topic is appended to"
                        + " its path (was '" + baseUrl + "')");
            }
            return url;
        }

        private static void validateHeader(String name, String value) {
            Objects.requireNonNull(name, "header name");
            if (HttpWebhookPublisher.isSetByPublisher(name)) {
                throw new IllegalArgumentException("header '" + name + "' is set by the publisher itself");
            }
            if (!HttpWebhookPublisher.isPrintableAscii(Objects.requireNonNull(value, "header value"))) {
                throw new IllegalArgumentException("header '" + name + "' must have a printable ASCII value");
            }
            try {
                HttpRequest.newBuilder().header(name, value);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("header '" + name + "' is not a valid HTTP header: "
                        + e.getMessage(), e);
            }
        }
    }
}

package dev.idempotency.http;

import dev.idempotency.core.IdempotencyKeys;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Immutable, validated settings of {@link IdempotentHttp}: which requests need an
 * {@code Idempotency-Key}, what of a response is stored and replayed, and how problems are typed.
 * Build with {@link #builder()}; invalid values fail at {@link Builder#build()}, not at the first request.
 */
public final class IdempotentHttpConfig {
    /** The header of draft-ietf-httpapi-idempotency-key-header. */
    public static final String DEFAULT_HEADER_NAME = "Idempotency-Key";
    /** The default problem type base: a tag URI (RFC 4151), stable and never dereferenced. */
    public static final String DEFAULT_PROBLEM_TYPE_BASE = "tag:idempotency.dev,2026:problem:";
    /** Headers a replay may never carry, even if listed: cookies and the fields that frame a message. */
    static final Set<String> NEVER_REPLAYED = Set.of("set-cookie", "set-cookie2", "content-length",
            "transfer-encoding", "connection", "keep-alive", "upgrade", "trailer", "te", "proxy-authenticate",
            "proxy-connection", "idempotent-replayed", "date");

    private final String headerName;
    private final Set<String> methods;
    private final List<String> pathPrefixes;
    private final List<Pattern> pathPatterns;
    private final int maxKeyLength;
    private final KeySyntax keySyntax;
    private final Set<String> replayedHeaders;
    private final int maxStoredBodyBytes;
    private final Set<Integer> storedClientErrors;
    private final Duration retryAfter;
    private final String problemTypeBase;

    private IdempotentHttpConfig(Builder b) {
        this.headerName = b.headerName;
        this.methods = Set.copyOf(b.methods);
        this.pathPrefixes = List.copyOf(b.pathPrefixes);
        this.pathPatterns = List.copyOf(b.pathPatterns);
        this.maxKeyLength = b.maxKeyLength;
        this.keySyntax = b.keySyntax;
        this.replayedHeaders = Set.copyOf(b.replayedHeaders);
        this.maxStoredBodyBytes = b.maxStoredBodyBytes;
        this.storedClientErrors = Set.copyOf(b.storedClientErrors);
        this.retryAfter = b.retryAfter;
        this.problemTypeBase = b.problemTypeBase;
    }

    /** A builder holding the defaults (see each setter). */
    public static Builder builder() {
        return new Builder();
    }

    /** The defaults, unchanged. */
    public static IdempotentHttpConfig defaults() {
        return builder().build();
    }

    /** The request header carrying the key; {@value #DEFAULT_HEADER_NAME} by default. */
    public String headerName() {
        return headerName;
    }

    /** Methods (upper case) whose requests need a key where a path rule matches; POST and PATCH by default. */
    public Set<String> methods() {
        return methods;
    }

    /** Path prefixes that need a key (a whole segment: {@code /payments} matches {@code /payments/1}, not {@code /paymentsx}). */
    public List<String> pathPrefixes() {
        return pathPrefixes;
    }

    /** Path patterns (whole-path matches) that need a key. */
    public List<Pattern> pathPatterns() {
        return pathPatterns;
    }

    /**
     * True when a request with this method and path must carry a key: its method is one of
     * {@link #methods()}, and either no path rule is set or one of them matches. Every other request
     * passes through untouched. {@code path} is the request's canonical path within the application
     * ({@link HttpPaths}): decoded, without path parameters or dot segments; a raw request-target
     * spelled otherwise than the rule would skip it.
     */
    public boolean requiresKey(String method, String path) {
        if (method == null || !methods.contains(method)) {
            return false;
        }
        if (pathPrefixes.isEmpty() && pathPatterns.isEmpty()) {
            return true;
        }
        String p = path == null ? "" : path;
        for (String prefix : pathPrefixes) {
            if (p.equals(prefix) || p.startsWith(prefix.endsWith("/") ? prefix : prefix + "/")) {
                return true;
            }
        }
        for (Pattern pattern : pathPatterns) {
            if (pattern.matcher(p).matches()) {
                return true;
            }
        }
        return false;
    }

    /** Longest key accepted, in characters; 255 by default. */
    public int maxKeyLength() {
        return maxKeyLength;
    }

    /**
     * Which spellings of the key header are accepted: {@link KeySyntax#LENIENT} (the default) takes
     * the unquoted key and its quoted Structured Field String form as the same key;
     * {@link KeySyntax#STRICT} takes the quoted form only, as draft-07 writes it.
     */
    public KeySyntax keySyntax() {
        return keySyntax;
    }

    /** Response headers (lower case) stored with a response and replayed; Content-Type is always kept. */
    public Set<String> replayedHeaders() {
        return replayedHeaders;
    }

    /** Largest response body stored for replay, in bytes; 32 KiB by default. */
    public int maxStoredBodyBytes() {
        return maxStoredBodyBytes;
    }

    /** The 4xx statuses the application declares as business failures: stored and replayed like a 2xx. None by default. */
    public Set<Integer> storedClientErrors() {
        return storedClientErrors;
    }

    /** The {@code Retry-After} sent with 409 (key in progress) and 503 (transient failure); 1 second by default. */
    public Duration retryAfter() {
        return retryAfter;
    }

    /** Prefix of every problem {@code type} URI; the case's name follows it. */
    public String problemTypeBase() {
        return problemTypeBase;
    }

    /** Mutable builder for {@link IdempotentHttpConfig}. */
    public static final class Builder {
        private String headerName = DEFAULT_HEADER_NAME;
        private final Set<String> methods = new LinkedHashSet<>(List.of("POST", "PATCH"));
        private final List<String> pathPrefixes = new ArrayList<>();
        private final List<Pattern> pathPatterns = new ArrayList<>();
        private int maxKeyLength = IdempotencyKeys.MAX_KEY_LENGTH;
        private KeySyntax keySyntax = KeySyntax.LENIENT;
        private final Set<String> replayedHeaders = new LinkedHashSet<>(List.of("content-type", "content-language",
                "content-location", "location", "etag", "last-modified", "cache-control"));
        private int maxStoredBodyBytes = 32 * 1024;
        private final Set<Integer> storedClientErrors = new TreeSet<>();
        private Duration retryAfter = Duration.ofSeconds(1);
        private String problemTypeBase = DEFAULT_PROBLEM_TYPE_BASE;

        private Builder() {
        }

        /** The key's request header; an HTTP token. */
        public Builder headerName(String headerName) {
            this.headerName = headerName;
            return this;
        }

        /** Replaces the methods that need a key (default POST, PATCH); tokens, kept as given (methods are case-sensitive). */
        public Builder methods(String... methods) {
            this.methods.clear();
            this.methods.addAll(List.of(methods));
            return this;
        }

        /** Adds path prefixes that need a key; with no path rule at all, every path does. */
        public Builder pathPrefixes(String... prefixes) {
            pathPrefixes.addAll(List.of(prefixes));
            return this;
        }

        /** Adds path patterns (matched against the whole path) that need a key. */
        public Builder pathPatterns(Pattern... patterns) {
            pathPatterns.addAll(List.of(patterns));
            return this;
        }

        /** Longest accepted key; 1 to 255 characters (the database's bound). */
        public Builder maxKeyLength(int maxKeyLength) {
            this.maxKeyLength = maxKeyLength;
            return this;
        }

        /** The key header's accepted spellings; {@link KeySyntax#LENIENT} by default. */
        public Builder keySyntax(KeySyntax keySyntax) {
            this.keySyntax = Objects.requireNonNull(keySyntax, "keySyntax");
            return this;
        }

        /**
         * Replaces the headers stored and replayed (default Content-Type, Content-Language,
         * Content-Location, Location, ETag, Last-Modified, Cache-Control). Set-Cookie and the
         * message-framing headers are refused: a replay must not hand one client's session to another.
         */
        public Builder replayedHeaders(String... names) {
            replayedHeaders.clear();
            replayedHeaders.add("content-type");
            for (String name : names) {
                replayedHeaders.add(Objects.requireNonNull(name, "header name").toLowerCase(Locale.ROOT));
            }
            return this;
        }

        /** Largest stored body; 0 bytes to 48 MiB. Keep the executor's {@code maxResultBytes} above 4/3 of it plus headers. */
        public Builder maxStoredBodyBytes(int maxStoredBodyBytes) {
            this.maxStoredBodyBytes = maxStoredBodyBytes;
            return this;
        }

        /**
         * Declares 4xx statuses as business failures (e.g. 402 card declined, 409 state conflict,
         * 422 rule violated): stored and replayed with the handler's writes committed. Other 4xx are
         * passed through, rolled back and not stored. 408 and 429 are refused: they are transient.
         */
        public Builder storedClientErrors(Integer... statuses) {
            storedClientErrors.addAll(List.of(statuses));
            return this;
        }

        /** Retry-After of 409 and 503 problems; whole seconds, 1 s to 1 h. */
        public Builder retryAfter(Duration retryAfter) {
            this.retryAfter = retryAfter;
            return this;
        }

        /** Prefix of the problem type URIs; an absolute URI (e.g. {@code https://api.example.com/problems/}). */
        public Builder problemTypeBase(String problemTypeBase) {
            this.problemTypeBase = problemTypeBase;
            return this;
        }

        /** Validates and freezes the settings. */
        public IdempotentHttpConfig build() {
            if (!HttpTokens.isToken(headerName)) {
                throw new IllegalArgumentException("headerName must be an HTTP token (was '" + headerName + "')");
            }
            if (methods.isEmpty()) {
                throw new IllegalArgumentException("methods must name at least one method, e.g. POST");
            }
            for (String method : methods) {
                if (!HttpTokens.isToken(method)) {
                    throw new IllegalArgumentException("methods must be HTTP tokens (was '" + method + "')");
                }
            }
            for (String prefix : pathPrefixes) {
                if (prefix == null || !prefix.startsWith("/")) {
                    throw new IllegalArgumentException("pathPrefixes must start with '/' (was '" + prefix + "')");
                }
            }
            for (Pattern pattern : pathPatterns) {
                Objects.requireNonNull(pattern, "pathPatterns");
            }
            if (maxKeyLength < 1 || maxKeyLength > IdempotencyKeys.MAX_KEY_LENGTH) {
                throw new IllegalArgumentException("maxKeyLength must be between 1 and " + IdempotencyKeys.MAX_KEY_LENGTH
                        + " (was " + maxKeyLength + ")");
            }
            for (String name : replayedHeaders) {
                if (NEVER_REPLAYED.contains(name)) {
                    throw new IllegalArgumentException("replayedHeaders must not contain " + name + ": a replay would hand it "
                            + "to another request (cookies) or break the message framing; remove it from the list");
                }
                if (!HttpTokens.isToken(name)) {
                    throw new IllegalArgumentException("replayedHeaders must be HTTP tokens (was '" + name + "')");
                }
            }
            if (maxStoredBodyBytes < 0 || maxStoredBodyBytes > 48 * 1024 * 1024) {
                throw new IllegalArgumentException("maxStoredBodyBytes must be between 0 and 50331648 (was " + maxStoredBodyBytes + ")");
            }
            for (Integer status : storedClientErrors) {
                if (status == null || status < 400 || status > 499) {
                    throw new IllegalArgumentException("storedClientErrors must be 4xx statuses (was " + status + ")");
                }
                if (status == 408 || status == 429) {
                    throw new IllegalArgumentException("storedClientErrors must not contain " + status
                            + ": it says 'try again later', so storing it would refuse every retry");
                }
            }
            Objects.requireNonNull(retryAfter, "retryAfter");
            if (retryAfter.compareTo(Duration.ofSeconds(1)) < 0 || retryAfter.compareTo(Duration.ofHours(1)) > 0
                    || retryAfter.getNano() != 0) {
                throw new IllegalArgumentException("retryAfter must be whole seconds between 1 s and 1 h (was " + retryAfter + ")");
            }
            Objects.requireNonNull(problemTypeBase, "problemTypeBase");
            try {
                if (!new URI(problemTypeBase + "x").isAbsolute()) {
                    throw new IllegalArgumentException("problemTypeBase must be an absolute URI (was '" + problemTypeBase + "')");
                }
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException("problemTypeBase must be an absolute URI (was '" + problemTypeBase + "')", e);
            }
            return new IdempotentHttpConfig(this);
        }
    }
}

package dev.idempotency.console;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.internal.SchemaNames;
import dev.idempotency.jdbc.UnknownOutcomes;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxStall;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The operator console (backlog, relays, dead letters, retries, idempotency keys and their unknown
 * outcomes), answering requests a host hands it: the relay
 * application's HTTP server or a servlet in a Spring Boot application. The host authenticates (the
 * console trusts the user name it is given) and mounts it under its base path; the console checks its
 * own CSRF token on every POST, refuses actions when read-only (403), and sets headers that forbid
 * caching, framing and anything loaded from elsewhere on every answer. Thread-safe; built once.
 */
public final class OutboxConsole {
    private final ConsoleHandler handler;

    private OutboxConsole(ConsoleHandler handler) {
        this.handler = handler;
    }

    /** A builder of a console over the outbox tables {@code dataSource} reaches. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** Answers {@code request}; never throws for a request it cannot serve (4xx), nor for a failed read (500, logged). */
    public Response handle(Request request) {
        return handler.handle(request);
    }

    /**
     * One request as the host received it.
     *
     * @param method     GET or POST (anything else is answered 405)
     * @param path       the path below the console's base path: {@code ""} or {@code "/"} for the overview,
     *                   {@code "/dead-letters"}, ...
     * @param parameters the query's parameters for a GET, the form's fields for a POST (first value of each)
     * @param user       who the host authenticated, as the action log names them; null for an anonymous user
     * @param hostCsrf   a CSRF token of the host's own (Spring Security's) to render into every form, or null
     */
    public record Request(String method, String path, Map<String, String> parameters, String user, HostCsrf hostCsrf) {
        public Request {
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(path, "path");
            parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
        }
    }

    /** A host framework's CSRF token: the form field its filter reads, and the token's value. */
    public record HostCsrf(String parameterName, String token) {
        public HostCsrf {
            Objects.requireNonNull(parameterName, "parameterName");
            Objects.requireNonNull(token, "token");
        }
    }

    /** The answer: status, headers to set (Content-Type among them), and the body (empty for none). */
    public record Response(int status, Map<String, String> headers, byte[] body) {
        public Response {
            headers = Map.copyOf(headers);
        }

        /** The body as UTF-8 text. */
        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** Collects a console's settings; {@link #build()} validates them. */
    public static final class Builder {
        private final DataSource dataSource;
        private String schema = SchemaNames.DEFAULT;
        private boolean readOnly;
        private String basePath = "/console";
        private Supplier<Duration> stalledFor;
        private Duration stallAfter = Duration.ofMinutes(5);
        private IdempotencyConfig idempotencyConfig;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The schema of the outbox tables; defaults to {@code idempotency}. */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /**
         * Without the actions (requeue, delete, resolve an unknown outcome): their buttons and forms are left
         * out and their POSTs refused (403); reveals stay. Default false.
         */
        public Builder readOnly(boolean readOnly) {
            this.readOnly = readOnly;
            return this;
        }

        /**
         * The absolute path the host serves the console under (its links and redirects start with it),
         * without a trailing slash: {@code /console} (the default), {@code /app/idempotency/console}.
         */
        public Builder basePath(String basePath) {
            this.basePath = basePath;
            return this;
        }

        /**
         * How long the outbox has been stalled, as the host's health check tracks it, and from how long on
         * that is an alarm (default 5 minutes). Without a tracker, the console keeps its own
         * {@link OutboxStall}, fed by the overviews it renders.
         */
        public Builder stall(Supplier<Duration> stalledFor, Duration stallAfter) {
            this.stalledFor = Objects.requireNonNull(stalledFor, "stalledFor");
            this.stallAfter = stallAfter;
            return this;
        }

        /** Like {@link #stall(Supplier, Duration)} with the console's own tracker. */
        public Builder stallAfter(Duration stallAfter) {
            this.stallAfter = stallAfter;
            return this;
        }

        /**
         * The executor's configuration, which resolving an unknown outcome uses as {@link UnknownOutcomes}
         * does: a resolved key is replayed for at least one more of its retention, and a result is stored
         * through its object mapper. Its schema must be the console's. Defaults to
         * {@link IdempotencyConfig#defaults()} on the console's schema (24 hours' retention).
         */
        public Builder idempotencyConfig(IdempotencyConfig idempotencyConfig) {
            this.idempotencyConfig = Objects.requireNonNull(idempotencyConfig, "idempotencyConfig");
            return this;
        }

        /** The console; an {@link IllegalArgumentException} names a setting that is out of range. */
        public OutboxConsole build() {
            SchemaNames.require(schema);
            if (basePath == null || !basePath.matches("(/[A-Za-z0-9._~-]+)+")) {
                throw new IllegalArgumentException("basePath must be an absolute path without a trailing slash, such as"
                        + " /console or /idempotency/console (was " + basePath + ")");
            }
            if (stallAfter == null || stallAfter.isNegative() || stallAfter.isZero()) {
                throw new IllegalArgumentException("stallAfter must be positive (was " + stallAfter + ")");
            }
            IdempotencyConfig keys = idempotencyConfig != null ? idempotencyConfig
                    : IdempotencyConfig.builder().schema(schema).build();
            if (!keys.schema().equals(schema)) {
                throw new IllegalArgumentException("idempotencyConfig's schema " + keys.schema() + " is not the console's "
                        + schema + ": the console reads the keys and the outbox in one schema; set the same on both");
            }
            OutboxBacklog backlog = OutboxBacklog.builder(dataSource).schema(schema).build();
            OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(dataSource).schema(schema).build();
            Supplier<Duration> stall = stalledFor;
            if (stall == null) {
                OutboxStall own = new OutboxStall();
                stall = () -> {
                    own.observe(backlog.oldestPendingAge());
                    return own.stalledFor();
                };
            }
            return new OutboxConsole(new ConsoleHandler(basePath, readOnly, new ConsoleQueries(dataSource, schema), backlog,
                    deadLetters, UnknownOutcomes.builder(dataSource).config(keys).build(), stall, stallAfter));
        }
    }
}

package dev.idempotency.spring.boot;

import dev.idempotency.http.KeySyntax;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The starter's settings, under {@code idempotency.*}. Every default is the library's own default,
 * so an application that sets nothing gets what the README documents for the plain library.
 *
 * @param enabled whether the starter configures anything at all
 * @param schema the schema holding the keys and outbox tables (a lower-case SQL identifier)
 * @param retention how long a completed key is replayed before it may be reclaimed and purged
 * @param waitBudget how long a concurrent duplicate waits for the first call before "in progress" (HTTP 409)
 * @param maxResultBytes the largest stored result, in bytes of JSON
 * @param maxOutboxPayloadBytes the largest outbox event payload, in bytes of JSON
 * @param migrations how the library's tables are created
 * @param http which requests need an {@code Idempotency-Key} and what of a response is stored
 * @param sweeper the background job failing expired leases and purging expired keys and published events
 * @param relay the outbox relay that publishes committed events to a broker
 * @param tracing the library's spans and the trace context stored with outbox events
 * @param console the operator console, served by the application when turned on
 */
@ConfigurationProperties("idempotency")
public record IdempotencyProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("idempotency") String schema,
        @DefaultValue("24h") Duration retention,
        @DefaultValue("5s") Duration waitBudget,
        @DefaultValue("65536") int maxResultBytes,
        @DefaultValue("1048576") int maxOutboxPayloadBytes,
        @DefaultValue Migrations migrations,
        @DefaultValue Http http,
        @DefaultValue Sweeper sweeper,
        @DefaultValue Relay relay,
        @DefaultValue TracingSettings tracing,
        @DefaultValue Console console) {

    /**
     * @param enabled whether the executor, the HTTP layer and the relay store and send trace context and
     *                make spans (with the OpenTelemetry API on the classpath); false turns all of it off
     */
    public record TracingSettings(@DefaultValue("true") boolean enabled) {
    }

    /** Who creates the library's tables. */
    public enum MigrationMode {
        /** The application's Flyway when it has one, else the library's own migrator. */
        AUTO,
        /** The library's own migrator ({@code IdempotencyMigrations.migrate(dataSource, schema)}). */
        LIBRARY,
        /**
         * After the application's Flyway, with its data source, into the library's schema and its
         * own history table ({@code idempotency_schema_history}), so the library's V1..V3 never meet
         * the application's versions.
         */
        FLYWAY,
        /** Nobody: the operator applies them (e.g. the {@code db} module's scripts on another path). */
        NONE
    }

    /**
     * @param mode who applies the migrations
     */
    public record Migrations(@DefaultValue("auto") MigrationMode mode) {
    }

    /**
     * @param enabled whether the Servlet filter is registered
     * @param paths path prefixes the filter guards (a whole segment: {@code /payments} covers
     *              {@code /payments/1}); a method listed in {@code methods} on these paths needs a key;
     *              empty: no path (controller methods annotated {@code @IdempotentEndpoint} need one
     *              wherever they are)
     * @param methods HTTP methods that need a key on the guarded paths
     * @param replayedHeaders response headers stored and replayed besides the content type
     *                        ({@code Set-Cookie} is never replayed)
     * @param maxRequestBytes the largest request body the filter reads to fingerprint it
     * @param maxResponseBytes the largest response body it stores
     * @param storedClientErrors the 4xx statuses the application declares as business failures:
     *                           stored and replayed like a 2xx (others and 5xx roll back)
     * @param tenantHeader a request header naming the tenant, for applications without an
     *                     authenticated principal; empty: the principal's name, else {@code default}
     * @param retryAfter the {@code Retry-After} of a 409 (the key's first request still running) and a
     *                   503 (a transient failure): whole seconds, 1 s to 1 h
     * @param keySyntax the key header's accepted spellings: {@code lenient} takes an unquoted key
     *                  ({@code Idempotency-Key: 8e03978e-...}, as Stripe's clients send it) and its
     *                  quoted Structured Field String form as the same key; {@code strict} takes the
     *                  quoted form only, as draft-ietf-httpapi-idempotency-key-header-07 writes it
     */
    public record Http(
            @DefaultValue("true") boolean enabled,
            @DefaultValue List<String> paths,
            @DefaultValue({"POST", "PATCH"}) List<String> methods,
            @DefaultValue({"Content-Type", "Content-Language", "Content-Location", "Location", "ETag", "Last-Modified",
                    "Cache-Control"}) List<String> replayedHeaders,
            @DefaultValue("1048576") int maxRequestBytes,
            @DefaultValue("32768") int maxResponseBytes,
            @DefaultValue List<Integer> storedClientErrors,
            @DefaultValue("") String tenantHeader,
            @DefaultValue("1s") Duration retryAfter,
            @DefaultValue("lenient") KeySyntax keySyntax) {
    }

    /**
     * @param enabled whether the sweeper runs in this application
     * @param interval the pause between sweeps
     * @param batchSize keys per statement (outbox events go a whole generation at a time)
     * @param publishedEventRetention how long outbox events are kept at least (see {@code Sweeper.Builder.publishedEventRetention})
     */
    public record Sweeper(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("30s") Duration interval,
            @DefaultValue("5000") int batchSize,
            @DefaultValue("24h") Duration publishedEventRetention) {
    }

    /**
     * @param enabled whether the relay runs in this application (off by default: it is often a process of its own)
     * @param publisher the publisher's name: {@code log}, {@code http}, {@code rabbitmq}, {@code nats}, {@code kafka},
     *                  or the name of another {@code PublisherProvider} on the class path
     * @param settings the publisher's settings, as its configuration builder's {@code settings(Map)} reads them
     *                 (e.g. {@code host} and {@code exchange} for {@code rabbitmq})
     * @param instanceId this relay's id; empty: a random one
     * @param partitions virtual partitions of the outbox (every relay on one database must agree)
     * @param batchSize events claimed per batch
     * @param idlePollMax the longest pause between polls when the outbox is idle
     * @param linger the least time between two reads while the relay keeps up with a steady stream
     *               (see {@code OutboxRelayConfig.linger()}); 0 reads again at once
     * @param positionWriteInterval the longest time between position writes while the relay keeps up
     *               (see {@code OutboxRelayConfig.positionWriteInterval()}); 0 writes after every page
     * @param readAhead behind a backlog, read the next page while the current one is published (see
     *               {@code OutboxRelayConfig.Builder.readAhead}): for a relay apart from PostgreSQL and its broker
     * @param metricsRefreshInterval how often the backlog and dead-letter gauges are read from the database
     * @param stallAfter the relay's health is DOWN once the same event has stayed the oldest pending one this
     *               long across health checks, only aging: the relays make no progress (see {@code OutboxStall})
     */
    public record Relay(
            @DefaultValue("false") boolean enabled,
            @DefaultValue("log") String publisher,
            @DefaultValue Map<String, String> settings,
            @DefaultValue("") String instanceId,
            @DefaultValue("32") int partitions,
            @DefaultValue("100") int batchSize,
            @DefaultValue("1s") Duration idlePollMax,
            @DefaultValue("10ms") Duration linger,
            @DefaultValue("100ms") Duration positionWriteInterval,
            @DefaultValue("false") boolean readAhead,
            @DefaultValue("10s") Duration metricsRefreshInterval,
            @DefaultValue("5m") Duration stallAfter) {
    }

    /**
     * @param enabled  whether the application serves the operator console (behind its own security)
     * @param path     where: an absolute path without a trailing slash, below the servlet context path
     * @param readOnly the console without its actions (requeue): their buttons left out, their POSTs refused
     */
    public record Console(
            @DefaultValue("false") boolean enabled,
            @DefaultValue("/idempotency/console") String path,
            @DefaultValue("false") boolean readOnly) {
    }
}

package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.console.OutboxConsole;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import dev.idempotency.outbox.publisher.Publishers;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The background process: the relay publishing the outbox, the sweeper keeping the tables clean,
 * and metrics and health over HTTP, until SIGTERM or SIGINT, on which it finishes its in-flight
 * batch, releases its partitions and exits 0.
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = "Run the outbox relay and the sweeper until stopped (SIGTERM / Ctrl-C).")
final class RunCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);

    /** Sweeper.Builder settings and the flags that set them. */
    private static final Map<String, String> SWEEPER_FLAGS = Map.of("batchSize", "--sweep-batch-size",
            "maxBatchesPerSweep", "--sweep-batches", "interval", "--sweep-interval",
            "publishedEventRetention", "--published-retention");

    @Mixin
    DatabaseOptions database;

    @Option(names = "--migrate", defaultValue = "${env:OUTBOX_MIGRATE:-false}",
            description = "Apply the library's migrations before starting; always done on an embedded PostgreSQL"
                    + " (env OUTBOX_MIGRATE; default: ${DEFAULT-VALUE}).")
    boolean migrate;

    @Option(names = "--publisher", defaultValue = "${env:OUTBOX_PUBLISHER:-log}",
            description = "Where events go: log, http, rabbitmq, nats, kafka, or the name of a PublisherProvider on the"
                    + " class path (env OUTBOX_PUBLISHER; default: ${DEFAULT-VALUE}).")
    String publisher;

    @Option(names = {"-s", "--publisher-setting"}, paramLabel = "NAME=VALUE",
            description = "A publisher setting, repeatable, e.g. -s base-url=https://example.com/hooks "
                    + "(env OUTBOX_PUBLISHER_SETTINGS: NAME=VALUE pairs separated by ';'; default: none).")
    Map<String, String> publisherSettings = new LinkedHashMap<>();

    @Option(names = "--instance-id", defaultValue = "${env:OUTBOX_INSTANCE_ID}",
            description = "This relay's id (env OUTBOX_INSTANCE_ID; default: random).")
    String instanceId;

    @Option(names = "--partitions", defaultValue = "${env:OUTBOX_PARTITIONS}",
            description = "Virtual partitions; the same on every relay of a database (env OUTBOX_PARTITIONS; default: 32).")
    Integer partitions;

    @Option(names = "--batch-size", defaultValue = "${env:OUTBOX_BATCH_SIZE}",
            description = "Events read, published and recorded per page (env OUTBOX_BATCH_SIZE; default: 100).")
    Integer batchSize;

    @Option(names = "--lease", defaultValue = "${env:OUTBOX_LEASE}", converter = DurationConverter.class,
            description = "Partition lease; a dead relay's share is taken over after about this long (env OUTBOX_LEASE; default: 30s).")
    Duration lease;

    @Option(names = "--renewal-interval", defaultValue = "${env:OUTBOX_RENEWAL_INTERVAL}", converter = DurationConverter.class,
            description = "How often leases are renewed; must leave room in --lease for a publish call"
                    + " (env OUTBOX_RENEWAL_INTERVAL; default: 5s).")
    Duration renewalInterval;

    @Option(names = "--publish-timeout", defaultValue = "${env:OUTBOX_PUBLISH_TIMEOUT}", converter = DurationConverter.class,
            description = "Longest wait for one publish call; a value shorter than the publisher's own limit (its connect"
                    + " and acknowledgement timeouts) is refused (env OUTBOX_PUBLISH_TIMEOUT; default: that limit plus a margin).")
    Duration publishTimeout;

    @Option(names = "--max-attempts", defaultValue = "${env:OUTBOX_MAX_ATTEMPTS}",
            description = "Attempts before an event is dead-lettered (env OUTBOX_MAX_ATTEMPTS; default: 20).")
    Integer maxAttempts;

    @Option(names = "--idle-poll-max", defaultValue = "${env:OUTBOX_IDLE_POLL_MAX}", converter = DurationConverter.class,
            description = "Longest pause between polls when the outbox is empty (env OUTBOX_IDLE_POLL_MAX; default: 1s).")
    Duration idlePollMax;

    @Option(names = "--linger", defaultValue = "${env:OUTBOX_LINGER}", converter = DurationConverter.class,
            description = "Least time between two reads while the relay keeps up with a steady stream, 0 to 1s;"
                    + " 0ms reads again at once (env OUTBOX_LINGER; default: 10ms).")
    Duration linger;

    @Option(names = "--read-ahead", arity = "0..1", defaultValue = "${env:OUTBOX_READ_AHEAD}",
            description = "Behind a backlog, read the next page while the current one is published: for a relay apart"
                    + " from PostgreSQL and its broker (env OUTBOX_READ_AHEAD; default: false).")
    Boolean readAhead;

    @Option(names = "--position-write-interval", defaultValue = "${env:OUTBOX_POSITION_WRITE_INTERVAL}",
            converter = DurationConverter.class,
            description = "Longest time between position writes while the relay keeps up, 0 to 10s; after a crash the"
                    + " events of at most this long are published again; 0ms writes after every page"
                    + " (env OUTBOX_POSITION_WRITE_INTERVAL; default: 100ms).")
    Duration positionWriteInterval;

    @Option(names = "--sweep-interval", defaultValue = "${env:OUTBOX_SWEEP_INTERVAL:-30s}", converter = DurationConverter.class,
            description = "Pause between sweeps, at least 10ms (env OUTBOX_SWEEP_INTERVAL; default: ${DEFAULT-VALUE}).")
    Duration sweepInterval;

    @Option(names = "--published-retention", defaultValue = "${env:OUTBOX_PUBLISHED_RETENTION:-24h}", converter = DurationConverter.class,
            description = "How long published events are kept at least; the sweeper removes them a whole generation at a time "
                    + "(env OUTBOX_PUBLISHED_RETENTION; default: ${DEFAULT-VALUE}).")
    Duration publishedRetention;

    @Option(names = "--sweep-batch-size", defaultValue = "${env:OUTBOX_SWEEP_BATCH_SIZE}",
            description = "Expired keys the sweeper deletes per statement, 1 to 100000 (env OUTBOX_SWEEP_BATCH_SIZE; default: "
                    + Sweeper.DEFAULT_BATCH_SIZE + ").")
    Integer sweepBatchSize;

    @Option(names = "--sweep-batches", defaultValue = "${env:OUTBOX_SWEEP_BATCHES}",
            description = "Most key batches per sweep, 1 to 100000 (env OUTBOX_SWEEP_BATCHES; default: "
                    + Sweeper.DEFAULT_MAX_BATCHES_PER_SWEEP + ").")
    Integer sweepBatches;

    @Option(names = "--no-sweeper", description = "Run the relay only; another process sweeps (default: off, the sweeper runs).")
    boolean noSweeper;

    @Option(names = "--http-host", defaultValue = "${env:OUTBOX_HTTP_HOST:-127.0.0.1}",
            description = "Address for /metrics and /health (env OUTBOX_HTTP_HOST; default: ${DEFAULT-VALUE}).")
    String httpHost;

    @Option(names = "--http-port", defaultValue = "${env:OUTBOX_HTTP_PORT:-9464}",
            description = "Port for /metrics and /health; 0 picks a free one, -1 turns them off "
                    + "(env OUTBOX_HTTP_PORT; default: ${DEFAULT-VALUE}).")
    int httpPort;

    @Option(names = "--stall-after", defaultValue = "${env:OUTBOX_STALL_AFTER:-5m}", converter = DurationConverter.class,
            description = "/health answers 503 once the same event has stayed the oldest pending one this long, only"
                    + " aging: the relays make no progress (env OUTBOX_STALL_AFTER; default: ${DEFAULT-VALUE}).")
    Duration stallAfter;

    @Mixin
    ConsoleOptions console;

    private final CountDownLatch stopRequested = new CountDownLatch(1);

    @Override
    public Integer call() throws Exception {
        Map<String, String> settings = new LinkedHashMap<>(environmentPublisherSettings());
        settings.putAll(publisherSettings);
        OutboxRelayConfig relayConfig = relayConfig();
        ConsoleAccess consoleAccess = console.served() ? console.access(httpHost, httpPort) : null;
        try (EmbeddedDatabase embedded = database.embeddedIfNoServer();
             HikariDataSource pool = database.pool("outbox-relay", 6);
             Publisher sink = Publishers.create(publisher, settings)) {
            Sweeper sweeper = noSweeper ? null : sweeper(pool);
            // An embedded server is new and empty: nothing to relay until the tables are there.
            if (migrate || embedded != null) {
                IdempotencyMigrations.migrate(pool, database.schema);
            }
            RequiredTables.require(pool, database.schema, noSweeper ? RequiredTables.RELAY
                    : Stream.concat(RequiredTables.RELAY.stream(), RequiredTables.SWEEPER.stream()).toList());
            OutboxBacklog backlog = OutboxBacklog.builder(pool).schema(database.schema).build();
            OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(pool).schema(database.schema).build();
            RelayMetrics metrics = new RelayMetrics(backlog, deadLetters);
            OutboxRelay relay = OutboxRelay.builder(pool, sink).config(relayConfig).listener(metrics.listener()).build();
            ScheduledExecutorService gauges = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "outbox-relay-gauges");
                thread.setDaemon(true);
                return thread;
            });
            StatusServer status = null;
            try {
                relay.start();
                if (sweeper != null) {
                    sweeper.start();
                    log.info("sweeper: up to {} batches of {} expired keys every {}; published events kept at least {}",
                            sweepBatches == null ? Sweeper.DEFAULT_MAX_BATCHES_PER_SWEEP : sweepBatches,
                            sweepBatchSize == null ? Sweeper.DEFAULT_BATCH_SIZE : sweepBatchSize, sweepInterval, publishedRetention);
                }
                gauges.scheduleWithFixedDelay(metrics::refresh, 0, 5, TimeUnit.SECONDS);
                if (httpPort >= 0) {
                    ConsoleHttpHandler consoleHandler = consoleAccess == null ? null : new ConsoleHttpHandler(consoleAccess,
                            OutboxConsole.builder(pool).schema(database.schema).readOnly(console.readOnly)
                                    .basePath(ConsoleHttpHandler.BASE_PATH).stall(metrics::stalledFor, stallAfter).build());
                    status = new StatusServer(httpHost, httpPort, metrics::scrape,
                            () -> health(relay, metrics, stallAfter), consoleHandler);
                    log.info("metrics at http://{}:{}/metrics, health at /health", httpHost, status.port());
                    if (consoleHandler != null) {
                        log.info("console at http://{}:{}/console ({}{})", httpHost, status.port(),
                                console.readOnly ? "read-only" : "with actions",
                                console.user == null ? ", loopback only" : ", HTTP Basic as " + console.user);
                    }
                }
                StopSignals.onTermAndInt(stopRequested::countDown);
                log.info("relay {} running with the {} publisher on schema {}; stop with SIGTERM or Ctrl-C",
                        relay.instanceId(), publisher, database.schema);
                stopRequested.await();
                log.info("stopping: finishing the in-flight batch and releasing partitions");
            } finally {
                relay.stop();
                if (sweeper != null) {
                    sweeper.close();
                }
                gauges.shutdownNow();
                if (status != null) {
                    status.close();
                }
            }
        }
        log.info("stopped");
        return 0;
    }

    private OutboxRelayConfig relayConfig() {
        OutboxRelayConfig.Builder builder = OutboxRelayConfig.builder().schema(database.schema);
        if (instanceId != null) {
            builder.instanceId(instanceId);
        }
        if (partitions != null) {
            builder.partitions(partitions);
        }
        if (batchSize != null) {
            builder.batchSize(batchSize);
        }
        if (lease != null) {
            builder.leaseDuration(lease);
        }
        if (renewalInterval != null) {
            builder.renewalInterval(renewalInterval);
        }
        if (publishTimeout != null) {
            builder.publishTimeout(publishTimeout);
        }
        if (maxAttempts != null) {
            builder.maxAttempts(maxAttempts);
        }
        if (idlePollMax != null) {
            builder.idlePollMax(idlePollMax);
        }
        if (linger != null) {
            builder.linger(linger);
        }
        if (positionWriteInterval != null) {
            builder.positionWriteInterval(positionWriteInterval);
        }
        if (readAhead != null) {
            builder.readAhead(readAhead);
        }
        return builder.build();
    }

    /** The sweeper as the flags set it; a refused setting is reported by its flag's name. */
    private Sweeper sweeper(HikariDataSource pool) {
        Sweeper.Builder builder = Sweeper.builder(pool).schema(database.schema)
                .interval(sweepInterval).publishedEventRetention(publishedRetention);
        if (sweepBatchSize != null) {
            builder.batchSize(sweepBatchSize);
        }
        if (sweepBatches != null) {
            builder.maxBatchesPerSweep(sweepBatches);
        }
        try {
            return builder.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(flagNamed(e.getMessage()), e);
        }
    }

    /** The builder's message with its setting's name replaced by the flag that sets it. */
    private static String flagNamed(String message) {
        for (Map.Entry<String, String> setting : SWEEPER_FLAGS.entrySet()) {
            if (message.startsWith(setting.getKey() + " ")) {
                return setting.getValue() + message.substring(setting.getKey().length());
            }
        }
        return message;
    }

    private static Map<String, String> environmentPublisherSettings() {
        Map<String, String> settings = new LinkedHashMap<>();
        String pairs = System.getenv("OUTBOX_PUBLISHER_SETTINGS");
        if (pairs == null || pairs.isBlank()) {
            return settings;
        }
        for (String pair : pairs.split(";")) {
            if (pair.isBlank()) {
                continue;
            }
            int equals = pair.indexOf('=');
            if (equals < 1) {
                throw new IllegalArgumentException("OUTBOX_PUBLISHER_SETTINGS holds '" + pair.strip()
                        + "'; write NAME=VALUE pairs separated by ';'");
            }
            settings.put(pair.substring(0, equals).strip(), pair.substring(equals + 1).strip());
        }
        return settings;
    }

    private static StatusServer.Health health(OutboxRelay relay, RelayMetrics metrics, Duration stallAfter) {
        boolean databaseAnswers = metrics.freshWithin(Duration.ofSeconds(30));
        return StatusServer.Health.ofRelay(databaseAnswers, relay.instanceId(), relay.heldPartitions().size(),
                metrics.stalledFor(), stallAfter);
    }
}

package dev.idempotency.benchmarks.harness;

import dev.idempotency.benchmarks.sections.Sections;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * The benchmark program: measures the executor against pgbench, a bare transaction, a Redis check
 * and a duplicate storm on a schema of its own, and prints one table. Exits 0 when every section ran
 * without errors (missed targets are reported in the table, not in the exit code), 1 otherwise.
 */
@Command(name = "benchmarks", mixinStandardHelpOptions = true, version = "idempotency benchmarks 0.1.0-SNAPSHOT",
        sortOptions = false,
        description = "Measure the idempotent executor against the local PostgreSQL and print one table.")
public final class BenchmarkMain implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(BenchmarkMain.class);

    @Option(names = "--sections", split = ",", defaultValue = "pgbench,overhead,redis,storm,relay,latency,peer,sweeper,relaycost,http,tracing",
            description = "Sections to run, comma-separated: pgbench, overhead, redis, storm, relay, latency, peer, sweeper, relaycost, http, "
                    + "tracing, pgbouncer (needs --pgbouncer-url), keylock, brokers (needs RabbitMQ and NATS) (default: ${DEFAULT-VALUE}).")
    List<String> sections;

    @Option(names = "--seconds", defaultValue = "10", description = "Measured seconds per cell (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", defaultValue = "5", description = "Warm-up seconds before each cell, not recorded (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--jit-warmup", defaultValue = "20",
            description = "Extra warm-up seconds before the first cell of each Java workload, for the JIT (default: ${DEFAULT-VALUE}).")
    int jitWarmup;

    @Option(names = "--jit-quiet-within", defaultValue = "60",
            description = "A closed-loop Java cell warms up on, at most this many seconds more, until the JIT compiler is "
                    + "quiet (under 20 ms of compiling in each of two 2 s probes); 0 opens the window by the clock alone "
                    + "(default: ${DEFAULT-VALUE}).")
    int jitQuietWithin;

    @Option(names = "--repeat", defaultValue = "1", description = "Runs per cell; the table shows medians (default: ${DEFAULT-VALUE}).")
    int repeat;

    @Option(names = "--callers", split = ",", defaultValue = "1,8,32",
            description = "Concurrent callers per cell, comma-separated; pools are sized to match (default: ${DEFAULT-VALUE}).")
    List<Integer> callers;

    @Option(names = "--storm-callers", defaultValue = "64",
            description = "Callers racing on one key in the duplicate storm, at most 200; beyond the connections PostgreSQL has free they share a pool (default: ${DEFAULT-VALUE}).")
    int stormCallers;

    @Option(names = "--sweeper-rows", defaultValue = "500000",
            description = "Rows past retention each sweeper cell purges, per table (default: ${DEFAULT-VALUE}).")
    int sweeperRows;

    @Option(names = "--jdbc-url", defaultValue = "${env:IDEMPOTENCY_JDBC_URL:-jdbc:postgresql://127.0.0.1:5432/test?user=postgres}",
            description = "PostgreSQL to measure (env IDEMPOTENCY_JDBC_URL; default: ${DEFAULT-VALUE}).")
    String jdbcUrl;

    @Option(names = "--db-user", defaultValue = "${env:IDEMPOTENCY_DB_USER}",
            description = "Database user, if the URL does not name one (env IDEMPOTENCY_DB_USER).")
    String dbUser;

    @Option(names = "--db-password", defaultValue = "${env:IDEMPOTENCY_DB_PASSWORD}",
            description = "Database password (env IDEMPOTENCY_DB_PASSWORD).")
    String dbPassword;

    @Option(names = "--redis-url", defaultValue = "redis://127.0.0.1:6379", description = "Redis for section 3 (default: ${DEFAULT-VALUE}).")
    String redisUrl;

    @Option(names = "--pgbouncer-url",
            description = "A JDBC URL through a PgBouncer 1.21+ in transaction mode with max_prepared_statements > 0, "
                    + "in front of the --jdbc-url database, for section pgbouncer (which runs only when named in --sections).")
    String pgbouncerUrl;

    @Option(names = "--pgbench", defaultValue = "pgbench", description = "The pgbench program (default: ${DEFAULT-VALUE}, from PATH).")
    String pgbench;

    @Option(names = "--relay-events", defaultValue = "1000000",
            description = "Backlog each relay throughput cell drains (default: ${DEFAULT-VALUE}).")
    int relayEvents;

    @Option(names = "--peer-events", defaultValue = "100000",
            description = "Backlog the peer outbox and ours each drain in section 7 (default: ${DEFAULT-VALUE}).")
    int peerEvents;

    @Option(names = "--relay-cost-events", defaultValue = "200000",
            description = "Backlog whose drain section 9 measures WAL and dead tuples of (default: ${DEFAULT-VALUE}).")
    int relayCostEvents;

    @Option(names = "--relay-keys", defaultValue = "10000",
            description = "Partition keys the relay backlogs are spread over (default: ${DEFAULT-VALUE}).")
    int relayKeys;

    @Option(names = "--relay-batch-size", defaultValue = "1000", description = "Relay batch size (default: ${DEFAULT-VALUE}).")
    int relayBatchSize;

    @Option(names = "--relay-events-per-key", defaultValue = "10",
            description = "Relay maxEventsPerKey (default: ${DEFAULT-VALUE}).")
    int relayEventsPerKey;

    @Option(names = "--relay-partitions", defaultValue = "32", description = "Relay virtual partitions (default: ${DEFAULT-VALUE}).")
    int relayPartitions;

    @Option(names = "--relay-linger-ms",
            description = "Relay linger in milliseconds, 0 to 1000 (default: the library's, OutboxRelayConfig.linger).")
    Integer relayLingerMs;

    @Option(names = "--latency-rate", defaultValue = "2000",
            description = "Events per second committed in the relay latency section (default: ${DEFAULT-VALUE}).")
    int latencyRate;

    @Option(names = "--consumer-messages", defaultValue = "100000",
            description = "Most messages a cell of section consumers consumes, timed (default: ${DEFAULT-VALUE}).")
    int consumerMessages;

    @Option(names = "--nats-url", defaultValue = "nats://127.0.0.1:4222",
            description = "NATS with JetStream for sections 5, brokers and consumers (default: ${DEFAULT-VALUE}).")
    String natsUrl;

    @Option(names = "--broker-events", defaultValue = "100000",
            description = "Events the relay drains to each broker, and the broker's own client publishes, in section "
                    + "brokers (default: ${DEFAULT-VALUE}).")
    int brokerEvents;

    @Option(names = "--brokers", split = ",", defaultValue = "jetstream,rabbitmq,kafka",
            description = "Brokers section brokers measures, comma-separated: jetstream (needs --nats-url), rabbitmq (needs "
                    + "--rabbitmq-url), kafka (started in this JVM, or in a container where Docker works) "
                    + "(default: ${DEFAULT-VALUE}).")
    List<String> brokers;

    @Option(names = "--rabbitmq-url", defaultValue = "amqp://guest:guest@127.0.0.1:5672",
            description = "RabbitMQ for sections brokers and consumers (default: ${DEFAULT-VALUE}).")
    String rabbitMqUrl;

    @Option(names = "--caller-threads", defaultValue = "platform",
            description = "What the callers of closed-loop cells run on: platform (a thread each) or virtual (Java 21 and "
                    + "later) (default: ${DEFAULT-VALUE}).")
    String callerThreads;

    @Option(names = "--markdown", description = "Print the table as Markdown, for the README.")
    boolean markdown;

    private final PrintStream out;
    private final String[] args;

    private BenchmarkMain(PrintStream out, String[] args) {
        this.out = out;
        this.args = args.clone();
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs the program with {@code args}, printing the table to {@code out} and usage errors to
     * {@code err}; returns the exit code (2 for invalid options).
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        CommandLine commandLine = new CommandLine(new BenchmarkMain(out, args));
        commandLine.setErr(new PrintWriter(err, true));
        commandLine.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof IllegalArgumentException) {
                // A setting refused at build(): its message names it; a stack trace would only hide that.
                cmd.getErr().println("benchmarks: " + e.getMessage());
                cmd.getErr().println("Try --help for the options.");
                return cmd.getCommandSpec().exitCodeOnInvalidInput();
            }
            if (e instanceof IllegalStateException) {
                // Something the run needs is missing (pgbench, say), and the message says what.
                cmd.getErr().println("benchmarks: " + e.getMessage());
                return cmd.getCommandSpec().exitCodeOnExecutionException();
            }
            throw e;
        });
        return commandLine.execute(args);
    }

    @Override
    public Integer call() throws Exception {
        BenchmarkSettings settings = BenchmarkSettings.builder()
                .sections(sections).callers(callers).seconds(seconds).warmupSeconds(warmup).jitWarmupSeconds(jitWarmup)
                .jitQuietWithinSeconds(jitQuietWithin).repeat(repeat)
                .stormCallers(stormCallers).sweeperRows(sweeperRows).jdbcUrl(jdbcUrl).dbUser(dbUser).dbPassword(dbPassword)
                .redisUri(redisUrl).pgbouncerUrl(pgbouncerUrl).pgbenchExecutable(pgbench).callerThreads(callerThreads).markdown(markdown).commandLine(commandLine())
                .relay(RelayBenchSettings.builder().events(relayEvents).peerEvents(peerEvents).costEvents(relayCostEvents).partitionKeys(relayKeys)
                        .batchSize(relayBatchSize).eventsPerKey(relayEventsPerKey).partitions(relayPartitions).lingerMillis(relayLingerMs)
                        .latencyRate(latencyRate).natsUrl(natsUrl).brokerEvents(brokerEvents).rabbitMqUrl(rabbitMqUrl)
                        .brokers(brokers).consumerMessages(consumerMessages).build())
                .build();
        boolean failed = false;
        List<ResultRow> rows = new ArrayList<>();
        try (BenchmarkDatabase database = BenchmarkDatabase.create(settings)) {
            Pgbench runner = new Pgbench(settings.pgbenchExecutable(), database.libpqEnvironment(), database.schema());
            // Interrupted with Ctrl-C, the run still drops its schema and files.
            Thread cleanup = new Thread(() -> {
                runner.deleteFiles();
                database.close();
            }, "benchmark-cleanup");
            Runtime.getRuntime().addShutdownHook(cleanup);
            try {
                List<String> header = header(settings, database, usesPgbench(settings) ? runner.version() : "pgbench not used");
                BenchmarkRun run = new BenchmarkRun(settings, database, runner);
                run.note("client CPU us/op: CPU time of the client process per operation over the measured window "
                        + "(the whole JVM: callers, GC and JIT; or the pgbench process); PostgreSQL's own CPU is not in it. "
                        + "Where client and server share the cores, client CPU is taken from the server.");
                run.note("client user us/op: the part of client CPU the process ran in user mode (its own code and "
                        + "libraries'); the rest is the kernel's, sending and receiving for it. Linux /proc, as switches.");
                run.note("client switches/op: how often the client's threads were switched off a CPU per operation (Linux "
                        + "/proc; the same process and span as client CPU). A caller thread blocked on its connection is "
                        + "switched out once per round trip; pgbench's two threads serve all connections from one poll.");
                run.measureTogether(settings.sections().stream().map(Sections::named).toList());
                for (String name : settings.sections()) {
                    Section section = Sections.named(name);
                    try {
                        rows.addAll(section.run(run));
                    } catch (Exception e) {
                        failed = true;
                        log.error("section {} failed", section.title(), e);
                        rows.add(new ResultRow(section.title(), "FAILED: " + e.getMessage(), 0, null, null, null, ClientCost.NONE, "-",
                                "-"));
                    }
                }
                failed |= run.anyErrors();
                out.print(new ResultTable(header, rows, run.notes()).render(settings.markdown()));
                out.flush();
            } finally {
                Runtime.getRuntime().removeShutdownHook(cleanup);
                runner.deleteFiles();
            }
        }
        return failed ? 1 : 0;
    }

    private static boolean usesPgbench(BenchmarkSettings settings) {
        return settings.sections().contains("pgbench") || settings.sections().contains("overhead")
                || settings.sections().contains(Sections.PGBOUNCER) || settings.sections().contains("consumers");
    }

    private static List<String> header(BenchmarkSettings settings, BenchmarkDatabase database, String pgbenchVersion) {
        Map<String, String> server = database.serverFacts();
        long memory = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        String date = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'"));
        return List.of(
                "idempotency benchmarks, " + date,
                String.format(Locale.ROOT, "machine: %d CPUs, %.1f GiB RAM, %s %s (%s); PostgreSQL %s (fsync %s, "
                                + "synchronous_commit %s, shared_buffers %s, max_connections %s); Java %s (%s); %s",
                        Runtime.getRuntime().availableProcessors(), memory / (1024.0 * 1024 * 1024),
                        System.getProperty("os.name"), System.getProperty("os.version"), System.getProperty("os.arch"),
                        server.get("version"), server.get("fsync"), server.get("synchronous_commit"),
                        server.get("shared_buffers"), server.get("max_connections"),
                        System.getProperty("java.version"), System.getProperty("java.vm.name"), pgbenchVersion),
                "each cell: " + settings.warmup().toSeconds() + " s warm-up (+" + settings.jitWarmup().toSeconds()
                        + " s for the JIT before a Java workload's first cell; a closed-loop Java cell warms up on until the "
                        + "JIT compiler is quiet, at most " + settings.jitQuietWithin().toSeconds() + " s more), then "
                        + settings.window().toSeconds()
                        + " s measured; median of " + settings.repeat() + " run(s), every cell compared at one caller count measured in turn, round by round; closed loop, one connection per caller, callers on "
                        + settings.callerThreads().optionName() + " threads; "
                        + "tables emptied and CHECKPOINT before each cell",
                "command: " + settings.commandLine());
    }

    /** The command line for the header, with any password masked. */
    private String commandLine() {
        StringBuilder line = new StringBuilder("java -jar benchmarks/target/benchmarks.jar");
        boolean maskNext = false;
        for (String arg : args) {
            String shown = arg;
            if (maskNext) {
                shown = "***";
            } else if (arg.startsWith("--db-password=")) {
                shown = "--db-password=***";
            } else if (arg.startsWith("--jdbc-url")) {
                shown = arg.replaceAll("password=[^&]*", "password=***");
            }
            maskNext = arg.equals("--db-password");
            line.append(' ').append(shown);
        }
        return line.toString();
    }
}

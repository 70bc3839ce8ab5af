package dev.idempotency.benchmarks.harness;

import dev.idempotency.benchmarks.sections.Sections;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Validated, immutable settings of one benchmark run: which sections, how long each cell runs, at
 * which concurrency, and where PostgreSQL, Redis and pgbench are. Invalid values fail at
 * {@link Builder#build()} with a message naming the setting.
 */
public final class BenchmarkSettings {
    /** Above this a single pool would take most of a default PostgreSQL's 100 connections. */
    static final int MAX_CALLERS = 64;
    /** Callers of the duplicate storm; beyond the connections PostgreSQL has free, they share a pool. */
    static final int MAX_STORM_CALLERS = 200;

    private final List<String> sections;
    private final List<Integer> callers;
    private final Duration window;
    private final Duration warmup;
    private final Duration jitWarmup;
    private final Duration jitQuietWithin;
    private final int repeat;
    private final int stormCallers;
    private final int sweeperRows;
    private final String jdbcUrl;
    private final String dbUser;
    private final String dbPassword;
    private final URI redisUri;
    private final String pgbouncerUrl;
    private final String pgbenchExecutable;
    private final boolean markdown;
    private final CallerThreads callerThreads;
    private final String commandLine;
    private final RelayBenchSettings relay;

    private BenchmarkSettings(Builder b, List<String> sections, List<Integer> callers, URI redisUri,
                              CallerThreads callerThreads) {
        this.sections = List.copyOf(sections);
        this.callers = List.copyOf(callers);
        this.window = Duration.ofSeconds(b.seconds);
        this.warmup = Duration.ofSeconds(b.warmupSeconds);
        this.jitWarmup = Duration.ofSeconds(b.jitWarmupSeconds);
        this.jitQuietWithin = Duration.ofSeconds(b.jitQuietWithinSeconds);
        this.repeat = b.repeat;
        this.stormCallers = b.stormCallers;
        this.sweeperRows = b.sweeperRows;
        this.jdbcUrl = b.jdbcUrl;
        this.dbUser = b.dbUser;
        this.dbPassword = b.dbPassword;
        this.redisUri = redisUri;
        this.pgbouncerUrl = b.pgbouncerUrl;
        this.pgbenchExecutable = b.pgbenchExecutable;
        this.markdown = b.markdown;
        this.callerThreads = callerThreads;
        this.commandLine = b.commandLine;
        this.relay = b.relay;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Section names to run, in the table's order. */
    public List<String> sections() {
        return sections;
    }

    /** Concurrent callers of each throughput cell; every pool is sized to it. */
    public List<Integer> callers() {
        return callers;
    }

    /** The measured window of each cell. */
    public Duration window() {
        return window;
    }

    /** The unrecorded run before each cell's window. */
    public Duration warmup() {
        return warmup;
    }

    /**
     * Extra warm-up before the first cell of each Java workload, so that the measured code is what
     * the JIT compiles rather than the interpreter (pgbench needs none).
     */
    Duration jitWarmup() {
        return jitWarmup;
    }

    /**
     * How much longer, at most, a closed-loop Java cell warms up after its warm-up while the JIT
     * compiler is still busy ({@link JitCompiler}); zero opens the window by the clock alone.
     */
    public Duration jitQuietWithin() {
        return jitQuietWithin;
    }

    /** How often each cell is measured; the table shows the medians. */
    public int repeat() {
        return repeat;
    }

    /** Callers racing on one key in the duplicate storm. */
    public int stormCallers() {
        return stormCallers;
    }

    /** Rows past retention each sweeper cell purges (section 8). */
    public int sweeperRows() {
        return sweeperRows;
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** Database user when the URL does not name one, else null. */
    public String dbUser() {
        return dbUser;
    }

    /** Database password, or null. */
    public String dbPassword() {
        return dbPassword;
    }

    public URI redisUri() {
        return redisUri;
    }

    /** A JDBC URL through a PgBouncer in front of {@link #jdbcUrl()}'s database, for section 11; empty if none was given. */
    public Optional<String> pgbouncerUrl() {
        return Optional.ofNullable(pgbouncerUrl);
    }

    /** The pgbench program, a path or a name looked up on PATH. */
    public String pgbenchExecutable() {
        return pgbenchExecutable;
    }

    /** Print the table as Markdown instead of aligned plain text. */
    boolean markdown() {
        return markdown;
    }

    /** What the callers of closed-loop cells run on. */
    public CallerThreads callerThreads() {
        return callerThreads;
    }

    /** Backlog sizes, relay tuning and broker of sections 5 to 7. */
    public RelayBenchSettings relay() {
        return relay;
    }

    /** How the run was started, for the table's header. */
    String commandLine() {
        return commandLine;
    }

    /** Mutable builder for {@link BenchmarkSettings}, with the program's defaults. */
    public static final class Builder {
        private List<String> sections = Sections.defaultNames();
        private List<Integer> callers = List.of(1, 8, 32);
        private int seconds = 10;
        private int warmupSeconds = 5;
        private int jitWarmupSeconds = 20;
        private int jitQuietWithinSeconds = 60;
        private int repeat = 1;
        private int stormCallers = 64;
        private int sweeperRows = 500_000;
        private String jdbcUrl = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
        private String dbUser;
        private String dbPassword;
        private String redisUri = "redis://127.0.0.1:6379";
        private String pgbouncerUrl;
        private String pgbenchExecutable = "pgbench";
        private boolean markdown;
        private String callerThreads = CallerThreads.PLATFORM.optionName();
        private String commandLine = "java -jar benchmarks/target/benchmarks.jar";
        private RelayBenchSettings relay = RelayBenchSettings.builder().build();

        private Builder() {
        }

        public Builder sections(List<String> sections) {
            this.sections = sections;
            return this;
        }

        public Builder callers(List<Integer> callers) {
            this.callers = callers;
            return this;
        }

        public Builder seconds(int seconds) {
            this.seconds = seconds;
            return this;
        }

        public Builder warmupSeconds(int warmupSeconds) {
            this.warmupSeconds = warmupSeconds;
            return this;
        }

        public Builder jitWarmupSeconds(int jitWarmupSeconds) {
            this.jitWarmupSeconds = jitWarmupSeconds;
            return this;
        }

        public Builder jitQuietWithinSeconds(int jitQuietWithinSeconds) {
            this.jitQuietWithinSeconds = jitQuietWithinSeconds;
            return this;
        }

        public Builder repeat(int repeat) {
            this.repeat = repeat;
            return this;
        }

        public Builder stormCallers(int stormCallers) {
            this.stormCallers = stormCallers;
            return this;
        }

        public Builder sweeperRows(int sweeperRows) {
            this.sweeperRows = sweeperRows;
            return this;
        }

        public Builder jdbcUrl(String jdbcUrl) {
            this.jdbcUrl = jdbcUrl;
            return this;
        }

        public Builder dbUser(String dbUser) {
            this.dbUser = dbUser;
            return this;
        }

        public Builder dbPassword(String dbPassword) {
            this.dbPassword = dbPassword;
            return this;
        }

        public Builder redisUri(String redisUri) {
            this.redisUri = redisUri;
            return this;
        }

        public Builder pgbouncerUrl(String pgbouncerUrl) {
            this.pgbouncerUrl = pgbouncerUrl;
            return this;
        }

        public Builder pgbenchExecutable(String pgbenchExecutable) {
            this.pgbenchExecutable = pgbenchExecutable;
            return this;
        }

        public Builder callerThreads(String callerThreads) {
            this.callerThreads = callerThreads;
            return this;
        }

        public Builder markdown(boolean markdown) {
            this.markdown = markdown;
            return this;
        }

        public Builder relay(RelayBenchSettings relay) {
            this.relay = relay;
            return this;
        }

        public Builder commandLine(String commandLine) {
            this.commandLine = commandLine;
            return this;
        }

        public BenchmarkSettings build() {
            if (sections == null || sections.isEmpty()) {
                throw new IllegalArgumentException("sections must name at least one of " + Sections.names());
            }
            for (String name : sections) {
                if (!Sections.names().contains(name)) {
                    throw new IllegalArgumentException("sections: unknown section '" + name + "'; known: " + Sections.names());
                }
            }
            // The table's order is the sections' order, whatever order they were asked in.
            List<String> ordered = Sections.names().stream().filter(sections::contains).toList();
            if (callers == null || callers.isEmpty()) {
                throw new IllegalArgumentException("callers must list at least one caller count");
            }
            for (Integer count : callers) {
                if (count == null || count < 1 || count > MAX_CALLERS) {
                    throw new IllegalArgumentException("callers must each be between 1 and " + MAX_CALLERS + " (was " + count + ")");
                }
            }
            if (seconds < 1) {
                throw new IllegalArgumentException("seconds must be at least 1 (was " + seconds + ")");
            }
            if (warmupSeconds < 0) {
                throw new IllegalArgumentException("warmup must be 0 or more seconds (was " + warmupSeconds + ")");
            }
            if (jitWarmupSeconds < 0) {
                throw new IllegalArgumentException("jitWarmup must be 0 or more seconds (was " + jitWarmupSeconds + ")");
            }
            if (jitQuietWithinSeconds < 0 || jitQuietWithinSeconds > 600) {
                throw new IllegalArgumentException("jitQuietWithin must be between 0 and 600 seconds (was "
                        + jitQuietWithinSeconds + ")");
            }
            CallerThreads threads = CallerThreads.named(callerThreads);
            if (threads == CallerThreads.VIRTUAL && Runtime.version().feature() < CallerThreads.VIRTUAL_SINCE) {
                throw new IllegalArgumentException("callerThreads virtual needs Java " + CallerThreads.VIRTUAL_SINCE
                        + " or later, and this is Java " + Runtime.version().feature() + "; run the jar with a newer java");
            }
            if (repeat < 1) {
                throw new IllegalArgumentException("repeat must be at least 1 (was " + repeat + ")");
            }
            if (stormCallers < 2 || stormCallers > MAX_STORM_CALLERS) {
                throw new IllegalArgumentException("stormCallers must be between 2 and " + MAX_STORM_CALLERS
                        + " (was " + stormCallers + ")");
            }
            if (sweeperRows < 1 || sweeperRows > 100_000_000) {
                throw new IllegalArgumentException("sweeperRows must be between 1 and 100000000 (was " + sweeperRows + ")");
            }
            if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("jdbcUrl must be a jdbc:postgresql: URL (was " + jdbcUrl + ")");
            }
            URI redis;
            try {
                redis = URI.create(Objects.requireNonNull(redisUri, "null"));
            } catch (IllegalArgumentException | NullPointerException e) {
                throw new IllegalArgumentException("redisUri must be a URI like redis://127.0.0.1:6379 (was " + redisUri + ")", e);
            }
            if (!"redis".equals(redis.getScheme()) || redis.getHost() == null) {
                throw new IllegalArgumentException("redisUri must be a URI like redis://127.0.0.1:6379 (was " + redisUri + ")");
            }
            if (pgbouncerUrl != null && !pgbouncerUrl.startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("pgbouncerUrl must be a jdbc:postgresql: URL (was " + pgbouncerUrl + ")");
            }
            if (sections.contains(Sections.PGBOUNCER) && pgbouncerUrl == null) {
                throw new IllegalArgumentException("pgbouncerUrl (--pgbouncer-url) is needed by section "
                        + Sections.PGBOUNCER + ": a JDBC URL through a PgBouncer 1.21+ in front of the benchmarked database");
            }
            if (pgbenchExecutable == null || pgbenchExecutable.isBlank()) {
                throw new IllegalArgumentException("pgbenchExecutable must name the pgbench program");
            }
            Objects.requireNonNull(commandLine, "commandLine");
            Objects.requireNonNull(relay, "relay");
            return new BenchmarkSettings(this, ordered, callers.stream().distinct().sorted().toList(), redis, threads);
        }
    }
}

package dev.idempotency.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.postgresql.Driver;

/**
 * A PgBouncer of the test's own, in transaction pooling mode (unless told otherwise) on a free loopback port in front of the
 * {@link TestDatabase}, with a few server connections so that clients share backends. Started from a
 * temporary directory with a generated ini; {@link #close()} stops it and removes the directory.
 * Never touches a system-wide PgBouncer.
 *
 * <p>Two kinds: one that passes clients' named prepared statements through untouched ({@link #start},
 * any version, Debian's package first), and one that tracks them per server connection
 * ({@link #startTrackingStatements}, PgBouncer 1.21 or later: the binary named by
 * {@value #BINARY_VARIABLE} or an installed one that is new enough). Where no fitting binary is found,
 * the test that asked is skipped with one line naming what is missing ({@link MissingTool}).
 */
public final class PrivatePgBouncer implements AutoCloseable {
    /** Environment variable naming a PgBouncer binary to use besides the installed one, e.g. one 1.21 or later. */
    public static final String BINARY_VARIABLE = "IDEMPOTENCY_TEST_PGBOUNCER";
    private static final List<Path> INSTALLED = List.of(Path.of("/usr/sbin/pgbouncer"), Path.of("/usr/bin/pgbouncer"));
    /** The first release that tracks protocol-level named prepared statements (max_prepared_statements). */
    private static final int TRACKING_SINCE_MINOR = 21;
    private static final Pattern VERSION = Pattern.compile("PgBouncer (\\d+)\\.(\\d+)");

    private final Path directory;
    private final Process process;
    private final int port;
    private final String database;
    private final String user;

    private PrivatePgBouncer(Path directory, Process process, int port, String database, String user) {
        this.directory = directory;
        this.process = process;
        this.port = port;
        this.database = database;
        this.user = user;
    }

    /** Starts a PgBouncer in transaction mode with {@code serverConnections} backends to the test database. */
    public static PrivatePgBouncer start(int serverConnections) {
        return start(serverConnections, "transaction");
    }

    /**
     * Starts a PgBouncer with {@code poolMode} (session, transaction or statement) that passes named
     * prepared statements through to whichever server connection a client gets (max_prepared_statements
     * 0, the default before 1.22).
     */
    public static PrivatePgBouncer start(int serverConnections, String poolMode) {
        List<Path> candidates = new ArrayList<>(INSTALLED);
        variableBinary().ifPresent(candidates::add);
        Path binary = candidates.stream().filter(Files::isExecutable).findFirst().orElseThrow(() -> MissingTool.skip(
                "no pgbouncer (looked for " + candidates + "): install Debian's package pgbouncer, or set " + BINARY_VARIABLE));
        boolean canTrack = canTrackStatements(binary);
        return start(binary, serverConnections, poolMode, canTrack ? List.of("max_prepared_statements = 0") : List.of());
    }

    /**
     * Starts a PgBouncer 1.21 or later in transaction mode that tracks clients' named prepared
     * statements, keeping at most {@code maxPreparedStatements} prepared on each server connection (the
     * least recently used are closed there and prepared again when a client uses them).
     */
    public static PrivatePgBouncer startTrackingStatements(int serverConnections, int maxPreparedStatements) {
        List<Path> candidates = new ArrayList<>();
        variableBinary().ifPresent(candidates::add);
        candidates.addAll(INSTALLED);
        Path binary = candidates.stream().filter(Files::isExecutable)
                .filter(PrivatePgBouncer::canTrackStatements).findFirst()
                .orElseThrow(() -> MissingTool.skip("no PgBouncer 1." + TRACKING_SINCE_MINOR + " or later (looked at "
                        + candidates + "; Debian 12 packages 1.18): set " + BINARY_VARIABLE + " to one, as .ci/run does "
                        + "after building Debian 13's source package"));
        return start(binary, serverConnections, "transaction", List.of("max_prepared_statements = " + maxPreparedStatements));
    }

    private static Optional<Path> variableBinary() {
        String named = System.getenv(BINARY_VARIABLE);
        return named == null || named.isBlank() ? Optional.empty() : Optional.of(Path.of(named));
    }

    /** Whether {@code binary} is PgBouncer 1.21 or later, by what {@code pgbouncer --version} says ("PgBouncer 1.18.0"). */
    private static boolean canTrackStatements(Path binary) {
        try {
            Process process = new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes());
            process.waitFor(10, TimeUnit.SECONDS);
            Matcher matcher = VERSION.matcher(output);
            if (!matcher.find()) {
                throw new IllegalStateException(binary + " --version did not name a PgBouncer version: " + output.strip());
            }
            int major = Integer.parseInt(matcher.group(1));
            return major > 1 || Integer.parseInt(matcher.group(2)) >= TRACKING_SINCE_MINOR;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking " + binary + " its version", e);
        }
    }

    private static PrivatePgBouncer start(Path binary, int serverConnections, String poolMode, List<String> settings) {
        TestDatabase target = TestDatabase.get();
        Properties url = Driver.parseURL(target.url(), null);
        if (url == null) {
            throw new IllegalStateException("cannot parse the test database URL " + target.url());
        }
        String user = target.user() != null ? target.user() : url.getProperty("user", "postgres");
        String password = target.password() != null ? target.password() : url.getProperty("password");
        String database = url.getProperty("PGDBNAME");
        try {
            Path directory = Files.createTempDirectory("pgbouncer-");
            // PgBouncer refuses to run as root; as root it drops to the postgres user, who must write here.
            Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxrwxrwx"));
            IllegalStateException last = null;
            for (int attempt = 0; attempt < 3; attempt++) {
                int port = freePort();
                Path ini = directory.resolve("pgbouncer.ini");
                List<String> lines = new ArrayList<>(List.of(
                        "[databases]",
                        database + " = host=" + url.getProperty("PGHOST").split(",")[0] + " port="
                                + url.getProperty("PGPORT").split(",")[0] + " dbname=" + database + " user=" + user
                                + (password == null ? "" : " password=" + password),
                        "[pgbouncer]",
                        "listen_addr = 127.0.0.1",
                        "listen_port = " + port,
                        "unix_socket_dir =",
                        "auth_type = trust",
                        "auth_file = " + directory.resolve("userlist.txt"),
                        "pool_mode = " + poolMode,
                        "default_pool_size = " + serverConnections,
                        "min_pool_size = 0",
                        "max_client_conn = 500",
                        "ignore_startup_parameters = extra_float_digits",
                        "logfile = " + directory.resolve("pgbouncer.log"),
                        "pidfile = " + directory.resolve("pgbouncer.pid")));
                lines.addAll(settings);
                lines.add("");
                Files.writeString(ini, String.join("\n", lines));
                Files.writeString(directory.resolve("userlist.txt"), "\"" + user + "\" \"\"\n");
                for (String file : List.of("pgbouncer.ini", "userlist.txt")) {
                    Files.setPosixFilePermissions(directory.resolve(file), PosixFilePermissions.fromString("rw-r--r--"));
                }
                ProcessBuilder command = "root".equals(System.getProperty("user.name"))
                        ? new ProcessBuilder(binary.toString(), "-u", "postgres", ini.toString())
                        : new ProcessBuilder(binary.toString(), ini.toString());
                Process process = command.redirectErrorStream(true)
                        .redirectOutput(directory.resolve("pgbouncer.out").toFile()).start();
                if (listening(process, port)) {
                    return new PrivatePgBouncer(directory, process, port, database, user);
                }
                process.destroyForcibly();
                last = new IllegalStateException("pgbouncer did not start on port " + port + ": " + tail(directory));
            }
            throw last;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The port PgBouncer listens on (127.0.0.1). */
    public int port() {
        return port;
    }

    /** A JDBC URL through PgBouncer; {@code parameters} (e.g. {@code prepareThreshold=0}) are appended, may be empty. */
    public String jdbcUrl(String parameters) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=" + user
                + (parameters.isEmpty() ? "" : "&" + parameters);
    }

    /**
     * A pool through PgBouncer. It sets no search path: session settings do not survive transaction
     * pooling, so SQL run through it names its schema.
     */
    public HikariDataSource pool(int size, String parameters) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl(parameters));
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setPoolName("pgbouncer-" + port + "-" + size);
        return new HikariDataSource(config);
    }

    /** What PgBouncer logged so far, for a failing test's message. */
    public String log() {
        return tail(directory);
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        try (Stream<Path> files = Files.walk(directory)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // A leftover temp directory is harmless.
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static boolean listening(Process process, int port) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline && process.isAlive()) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                return true;
            } catch (IOException e) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        return false;
    }

    private static String tail(Path directory) {
        StringBuilder text = new StringBuilder();
        for (String file : List.of("pgbouncer.out", "pgbouncer.log")) {
            try {
                String content = Files.readString(directory.resolve(file));
                text.append(content, Math.max(0, content.length() - 2000), content.length());
            } catch (IOException e) {
                // Not written yet.
            }
        }
        return text.toString().strip();
    }
}

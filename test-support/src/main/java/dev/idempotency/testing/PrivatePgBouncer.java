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
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.postgresql.Driver;

/**
 * A PgBouncer of the test's own, in transaction pooling mode (unless told otherwise) on a free loopback port in front of the
 * {@link TestDatabase}, with a few server connections so that clients share backends. Started from a
 * temporary directory with a generated ini; {@link #close()} stops it and removes the directory.
 * Never touches a system-wide PgBouncer.
 */
public final class PrivatePgBouncer implements AutoCloseable {
    private static final List<Path> BINARIES = List.of(Path.of("/usr/sbin/pgbouncer"), Path.of("/usr/bin/pgbouncer"));

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

    /** Starts a PgBouncer with {@code poolMode} (session, transaction or statement). */
    public static PrivatePgBouncer start(int serverConnections, String poolMode) {
        Path binary = BINARIES.stream().filter(Files::isExecutable).findFirst().orElseThrow(() -> new IllegalStateException(
                "pgbouncer is not installed (looked for " + BINARIES + "): install it with `apt-get install pgbouncer`"));
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
                Files.writeString(ini, String.join("\n",
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
                        "pidfile = " + directory.resolve("pgbouncer.pid"),
                        ""));
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

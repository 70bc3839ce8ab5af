package dev.idempotency.faults;

import dev.idempotency.testing.MissingTool;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PostgreSQL server of the test's own (initdb into a temporary directory, trust auth, a free
 * port on 127.0.0.1), so that a test can restart a server without disturbing the shared one that
 * other tests use. initdb refuses to run as root, so as root the server runs as the {@code postgres}
 * OS user. {@link #close()} stops it and deletes its files.
 *
 * <p>For the moves of a database's history, the server on a port can be replaced: by a base backup
 * of itself taken earlier ({@link #baseBackup()}, {@link #crashAndStartFrom}), by a standby of it
 * promoted there ({@link #standby()}, {@link #crashAndPromote}), or by a fresh cluster
 * ({@link #crashAndStartFreshCluster()}); clients that reconnect to {@link #url()} meet the new one.
 */
final class PrivatePostgres implements AutoCloseable {
    private final Path bin;
    private final Path dir;
    private final boolean asPostgresUser;
    private final List<String> settings;
    private Path data;
    private int port;
    private int clusters;
    /** False for a standby, whose files live in its primary's directory. */
    private boolean ownsDirectory = true;

    private PrivatePostgres(Path bin, Path dir, int port, boolean asPostgresUser, List<String> settings) {
        this.bin = bin;
        this.dir = dir;
        this.data = dir.resolve("data");
        this.port = port;
        this.asPostgresUser = asPostgresUser;
        this.settings = List.copyOf(settings);
    }

    /** Creates and starts a server; without PostgreSQL's server binaries the test is skipped with a line naming them. */
    static PrivatePostgres start() throws IOException, InterruptedException {
        return start(List.of());
    }

    /** As {@link #start()}, with server settings ({@code name=value}) on its command line. */
    static PrivatePostgres start(List<String> settings) throws IOException, InterruptedException {
        Path bin = binaries();
        boolean root = "root".equals(System.getProperty("user.name"));
        Path dir = Files.createTempDirectory("fault-tests-pg-");
        if (root) {
            run(List.of("chown", "postgres:postgres", dir.toString()), 30);
        }
        PrivatePostgres server = new PrivatePostgres(bin, dir, freePort(), root, settings);
        try {
            server.initdb(server.data);
            server.startServer();
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        return server;
    }

    private void initdb(Path into) throws IOException, InterruptedException {
        command(60, bin.resolve("initdb").toString(), "-D", into.toString(), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                "--no-sync");
    }

    /** A consistent copy of this running server's data directory as of now (pg_basebackup, WAL streamed). */
    Path baseBackup() throws IOException, InterruptedException {
        Path copy = dir.resolve("backup-" + (++clusters));
        command(120, bin.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port),
                "-U", "postgres", "-D", copy.toString(), "-X", "stream", "--no-sync", "-c", "fast");
        return copy;
    }

    /** A streaming standby of this server (a base backup with standby.signal), running on a port of its own. */
    PrivatePostgres standby() throws IOException, InterruptedException {
        Path copy = dir.resolve("standby-" + (++clusters));
        command(120, bin.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port),
                "-U", "postgres", "-D", copy.toString(), "-X", "stream", "--no-sync", "-c", "fast", "-R");
        PrivatePostgres standby = new PrivatePostgres(bin, dir, freePort(), asPostgresUser, settings);
        standby.data = copy;
        standby.ownsDirectory = false;
        standby.startServer();
        return standby;
    }

    /**
     * A new cluster (initdb: its own system identifier and counter) beside this one, on a port of its own,
     * with this one's settings; its files live in this server's directory, so it can take this one's place
     * ({@link #crashAndStartFrom} with its {@link #dataDirectory()}, once stopped).
     */
    PrivatePostgres clusterBeside() throws IOException, InterruptedException {
        PrivatePostgres beside = new PrivatePostgres(bin, dir, freePort(), asPostgresUser, settings);
        beside.data = dir.resolve("cluster-" + (++clusters));
        beside.ownsDirectory = false;
        beside.initdb(beside.data);
        beside.startServer();
        return beside;
    }

    Path dataDirectory() {
        return data;
    }

    /** Stops at once, as a crash or a lost machine would: no shutdown checkpoint, clients cut off. */
    void crash() throws IOException, InterruptedException {
        command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w", "stop");
    }

    /** Crashes this server and starts {@code earlier} (a base backup) in its place: its history goes back. */
    void crashAndStartFrom(Path earlier) throws IOException, InterruptedException {
        crash();
        data = earlier;
        startServer();
    }

    /**
     * Crashes this server and promotes {@code standby} on this server's port in its place: the failover to a
     * standby, with whatever it had replayed (stop it first to make it lag). The standby object is spent.
     */
    void crashAndPromote(PrivatePostgres standby) throws IOException, InterruptedException {
        crash();
        if (Files.exists(standby.data.resolve("postmaster.pid"))) {
            standby.stopServer();
        }
        data = standby.data;
        // Still a standby until promoted: with no primary to stream from, not even itself on this port.
        startServer("primary_conninfo=''");
        command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-w", "-t", "60", "promote");
    }

    /** Crashes this server and starts a new cluster (initdb: its own system identifier and counter) in its place. */
    void crashAndStartFreshCluster() throws IOException, InterruptedException {
        crash();
        data = dir.resolve("cluster-" + (++clusters));
        initdb(data);
        startServer();
    }

    /** Runs SQL through psql on database postgres (autocommit; a DO block may COMMIT). */
    String psql(String sql) throws IOException, InterruptedException {
        return command(300, bin.resolve("psql").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port), "-U", "postgres",
                "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql);
    }

    /** Spends {@code count} transaction ids, one committed transaction each, to move the counter on. */
    void burnTransactionIds(int count) throws IOException, InterruptedException {
        psql("DO $$ BEGIN FOR i IN 1.." + count + " LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$");
    }

    /** pg_dump of one schema (custom format) as it is now, while clients go on. */
    Path dump(String schema) throws IOException, InterruptedException {
        return dump(schema, false);
    }

    /** pg_dump of one schema's definitions only (custom format), as a logical replica's subscriber needs. */
    Path dumpDefinitions(String schema) throws IOException, InterruptedException {
        return dump(schema, true);
    }

    private Path dump(String schema, boolean definitionsOnly) throws IOException, InterruptedException {
        Path file = dir.resolve("dump-" + (++clusters) + ".pgdump");
        List<String> args = new ArrayList<>(List.of(bin.resolve("pg_dump").toString(), "-h", "127.0.0.1", "-p",
                Integer.toString(port), "-U", "postgres", "-Fc", "-n", schema, "-f", file.toString()));
        if (definitionsOnly) {
            args.add("--schema-only");
        }
        args.add("postgres");
        command(120, args.toArray(String[]::new));
        return file;
    }

    /** pg_restore of a dump into database postgres of the server running now. */
    void restore(Path dump) throws IOException, InterruptedException {
        command(300, bin.resolve("pg_restore").toString(), "-h", "127.0.0.1", "-p", Integer.toString(port), "-U", "postgres",
                "-d", "postgres", "--exit-on-error", dump.toString());
    }

    int port() {
        return port;
    }

    /** The directory of initdb and pg_ctl: {@code pg_config --bindir}, else the newest /usr/lib/postgresql/N/bin. */
    private static Path binaries() throws InterruptedException {
        List<Path> candidates = new ArrayList<>();
        try {
            String bindir = run(List.of("pg_config", "--bindir"), 30).strip();
            candidates.add(Path.of(bindir));
        } catch (IOException | RuntimeException e) {
            // No pg_config on the path; look in the Debian layout.
        }
        Path debian = Path.of("/usr/lib/postgresql");
        if (Files.isDirectory(debian)) {
            try (Stream<Path> versions = Files.list(debian)) {
                versions.map(v -> v.resolve("bin"))
                        .sorted(Comparator.comparing((Path p) -> versionOf(p)).reversed())
                        .forEach(candidates::add);
            } catch (IOException e) {
                // Unreadable: fall through to the failure below.
            }
        }
        for (Path candidate : candidates) {
            if (Files.isExecutable(candidate.resolve("initdb")) && Files.isExecutable(candidate.resolve("pg_ctl"))) {
                return candidate;
            }
        }
        throw MissingTool.skip("no PostgreSQL server binaries (initdb, pg_ctl) for a private server the test can restart "
                + "(looked in `pg_config --bindir` and /usr/lib/postgresql/*/bin): install Debian's package postgresql");
    }

    private static int versionOf(Path bin) {
        try {
            return Integer.parseInt(bin.getParent().getFileName().toString());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    String url() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
    }

    /** Fast shutdown (clients are disconnected, in-flight transactions roll back), then start again. */
    void restart() throws IOException, InterruptedException {
        command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "fast", "-w", "-t", "60", "stop");
        startServer();
    }

    /** Fast shutdown only; {@link #startServer()} brings it back. */
    void stopServer() throws IOException, InterruptedException {
        command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "fast", "-w", "-t", "60", "stop");
    }

    void startServer() throws IOException, InterruptedException {
        startServer(new String[0]);
    }

    private void startServer(String... extraSettings) throws IOException, InterruptedException {
        StringBuilder options = new StringBuilder("-p " + port + " -k " + dir
                + " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40");
        settings.forEach(setting -> options.append(" -c ").append(setting));
        for (String setting : extraSettings) {
            options.append(" -c ").append(setting);
        }
        Path log = dir.resolve(data.getFileName() + ".log");
        command(90, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l", log.toString(),
                "-w", "-t", "60", "-o", options.toString(), "start");
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            if (Files.exists(data.resolve("postmaster.pid"))) {
                command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w", "stop");
            }
        } finally {
            if (ownsDirectory) {
                try (Stream<Path> files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }

    private String command(long timeoutSeconds, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        if (asPostgresUser) {
            command.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        command.addAll(List.of(args));
        return run(command, timeoutSeconds);
    }

    private static String run(List<String> command, long timeoutSeconds) throws IOException, InterruptedException {
        Path output = Files.createTempFile("fault-tests-cmd-", ".out");
        try {
            // Output to a file, not a pipe: pg_ctl's server inherits it and would keep a pipe open.
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(command + " did not finish within " + timeoutSeconds + " s");
            }
            String text = Files.readString(output, StandardCharsets.UTF_8);
            if (process.exitValue() != 0) {
                throw new IllegalStateException(command + " failed with exit " + process.exitValue() + ":\n" + text);
            }
            return text;
        } finally {
            Files.deleteIfExists(output);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}

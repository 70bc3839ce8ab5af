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
 */
final class PrivatePostgres implements AutoCloseable {
    private final Path bin;
    private final Path dir;
    private final Path data;
    private final int port;
    private final boolean asPostgresUser;

    private PrivatePostgres(Path bin, Path dir, int port, boolean asPostgresUser) {
        this.bin = bin;
        this.dir = dir;
        this.data = dir.resolve("data");
        this.port = port;
        this.asPostgresUser = asPostgresUser;
    }

    /** Creates and starts a server; without PostgreSQL's server binaries the test is skipped with a line naming them. */
    static PrivatePostgres start() throws IOException, InterruptedException {
        Path bin = binaries();
        boolean root = "root".equals(System.getProperty("user.name"));
        Path dir = Files.createTempDirectory("fault-tests-pg-");
        if (root) {
            run(List.of("chown", "postgres:postgres", dir.toString()), 30);
        }
        PrivatePostgres server = new PrivatePostgres(bin, dir, freePort(), root);
        try {
            server.command(60, bin.resolve("initdb").toString(), "-D", server.data.toString(), "-A", "trust",
                    "-U", "postgres", "-E", "UTF8", "--no-sync");
            server.startServer();
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        return server;
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
        command(90, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l", dir.resolve("server.log").toString(),
                "-w", "-t", "60", "-o", "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c fsync=off "
                        + "-c max_connections=40", "start");
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            if (Files.exists(data.resolve("postmaster.pid"))) {
                command(60, bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w", "stop");
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
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

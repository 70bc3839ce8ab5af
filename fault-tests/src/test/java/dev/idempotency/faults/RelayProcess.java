package dev.idempotency.faults;

import dev.idempotency.outbox.cli.OutboxRelayCli;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The runnable relay ({@code OutboxRelayCli run}) as a child JVM publishing to a webhook, as an
 * operator runs it; {@link #kill()} is SIGKILL ({@link Process#destroyForcibly()}): no shutdown
 * hook, no lease released, a batch cut short.
 */
final class RelayProcess implements AutoCloseable {
    /** Lease settings the CLI accepts with its 5 s renewal: a dead relay's share is taken over in about 13 s. */
    static final String LEASE = "8s";
    static final String RENEWAL_INTERVAL = "1s";
    static final int PARTITIONS = 8;
    private static final java.util.regex.Pattern METRICS_URL = java.util.regex.Pattern.compile("metrics at (http://\\S+/metrics)");

    private final String name;
    private final Process process;
    private final StringBuilder output = new StringBuilder();
    private final CountDownLatch running = new CountDownLatch(1);
    private volatile String metricsUrl;

    private RelayProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        Thread reader = new Thread(this::drain, "relay-output-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts relay {@code name} on {@code db}'s schema, posting to {@code webhookBaseUrl}. */
    static RelayProcess start(String name, FaultDatabase db, String webhookBaseUrl) throws IOException {
        return start(name, db, webhookBaseUrl, -1);
    }

    /** As {@link #start(String, FaultDatabase, String)}, serving /metrics on {@code httpPort} (0: any free port, -1: none). */
    static RelayProcess start(String name, FaultDatabase db, String webhookBaseUrl, int httpPort) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), OutboxRelayCli.class.getName(),
                "run", "--publisher", "http",
                "-s", "base-url=" + webhookBaseUrl,
                "-s", "header." + WebhookSink.RELAY_HEADER + "=" + name,
                // The relay derives its publish call bound from these: 1 s connect + 2 s request + margin.
                "-s", "connect-timeout=1s", "-s", "request-timeout=2s",
                "--instance-id", name,
                "--partitions", String.valueOf(PARTITIONS),
                "--lease", LEASE, "--renewal-interval", RENEWAL_INTERVAL,
                "--max-attempts", "1000", "--idle-poll-max", "100ms",
                "--no-sweeper", "--http-port", String.valueOf(httpPort),
                "--jdbc-url", db.url(), "--schema", db.schema()));
        if (db.user() != null) {
            command.addAll(List.of("--db-user", db.user()));
        }
        if (db.password() != null) {
            command.addAll(List.of("--db-password", db.password()));
        }
        return new RelayProcess(name, new ProcessBuilder(command).redirectErrorStream(true).start());
    }

    String name() {
        return name;
    }

    /** Waits (bounded) until the relay says it is running; false if it did not, or died. */
    boolean awaitRunning(long seconds) throws InterruptedException {
        return running.await(seconds, TimeUnit.SECONDS) && process.isAlive();
    }

    /** The /metrics URL the process printed, once it is running with metrics on; else null. */
    String metricsUrl() {
        return metricsUrl;
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL, and waits (bounded) for the process to be gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError("relay " + name + " survived SIGKILL");
        }
    }

    synchronized String output() {
        return output.toString();
    }

    private void drain() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                synchronized (this) {
                    if (output.length() < 200_000) {
                        output.append(line).append('\n');
                    }
                }
                java.util.regex.Matcher metrics = METRICS_URL.matcher(line);
                if (metrics.find()) {
                    metricsUrl = metrics.group(1);
                }
                if (line.contains("running with the")) {
                    running.countDown();
                }
            }
        } catch (IOException e) {
            // The process is gone.
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}

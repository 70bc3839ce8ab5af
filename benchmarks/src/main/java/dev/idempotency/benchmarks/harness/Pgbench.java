package dev.idempotency.benchmarks.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;

/**
 * Runs one of the {@code pgbench/} scripts through the pgbench program against the run's schema:
 * prepared statements, one connection per client, a warm-up run, then a timed run whose per-transaction
 * log gives the same percentiles the Java cells report. pgbench is C on libpq: the physical limit
 * for the script's SQL on this machine.
 */
public final class Pgbench {
    /** How long pgbench may take beyond its own -T before it is taken for hung and killed. */
    private static final Duration OVERRUN = Duration.ofSeconds(120);
    private static final Duration CPU_POLL = Duration.ofMillis(200);
    private static final Pattern TPS = Pattern.compile("^tps = ([0-9.]+)", Pattern.MULTILINE);
    private static final Pattern FAILED = Pattern.compile("^number of failed transactions: (\\d+)", Pattern.MULTILINE);
    private static final Pattern PROCESSED = Pattern.compile("^number of transactions actually processed: (\\d+)", Pattern.MULTILINE);

    private final String executable;
    private final Map<String, String> environment;
    private final String schema;
    private final Path workDirectory;

    public Pgbench(String executable, Map<String, String> environment, String schema) {
        this(executable, environment, schema, newWorkDirectory());
    }

    private Pgbench(String executable, Map<String, String> environment, String schema, Path workDirectory) {
        this.executable = executable;
        this.environment = Map.copyOf(environment);
        this.schema = schema;
        this.workDirectory = workDirectory;
    }

    private static Path newWorkDirectory() {
        try {
            return Files.createTempDirectory("idempotency-pgbench-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for pgbench's scripts and logs", e);
        }
    }

    /**
     * The same pgbench on the same schema, connecting with {@code environment} (through a pooler, say);
     * it writes in this one's directory, which {@link #deleteFiles()} of this one removes.
     */
    public Pgbench connectingWith(Map<String, String> environment) {
        return new Pgbench(executable, environment, schema, workDirectory);
    }

    /**
     * The same pgbench on another schema (a comparison schema of the run, say); it writes in this one's
     * directory, which {@link #deleteFiles()} of this one removes. Cells run one at a time, so a script
     * of the same name written for either schema is written again before each run.
     */
    public Pgbench onSchema(String schema) {
        return new Pgbench(executable, environment, schema, workDirectory);
    }

    /** The version pgbench reports, or why it cannot be run. */
    String version() {
        try {
            Process process = new ProcessBuilder(executable, "--version").redirectErrorStream(true).start();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(executable + " --version did not answer within 30 s");
            }
            return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            throw new IllegalStateException("cannot run pgbench as '" + executable + "' (install PostgreSQL's client "
                    + "tools, or pass --pgbench /path/to/pgbench): " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Runs {@code script} (a file name under {@code pgbench/}) with {@code clients} connections for
     * the warm-up, then for the window, defining {@code variables} with -D.
     */
    public Measurement run(String script, int clients, Duration warmup, Duration window, Map<String, String> variables)
            throws IOException, InterruptedException {
        Path scriptFile = workDirectory.resolve(script);
        Files.writeString(scriptFile, BenchmarkSql.render(BenchmarkDatabase.resource("pgbench/" + script), schema));
        if (!warmup.isZero()) {
            Result warm = pgbench(scriptFile, clients, warmup, variables, null);
            if (warm.exitCode != 0) {
                return failed(warm);
            }
        }
        Path logDirectory = Files.createTempDirectory(workDirectory, "log-");
        try {
            Result result = pgbench(scriptFile, clients, window, variables, logDirectory.resolve("tx"));
            if (result.exitCode != 0) {
                return failed(result);
            }
            Histogram latencies = Measurement.newLatencyHistogram();
            long failedInLog = readTransactionLog(logDirectory, latencies);
            long failed = Math.max(failedInLog, firstLong(FAILED, result.output, 0));
            double tps = Double.parseDouble(first(TPS, result.output, "0"));
            Measurement fromLog = Measurement.of(latencies, window.toSeconds(), failed,
                    failed > 0 ? "pgbench counted " + failed + " failed transactions" : null);
            // pgbench's own rate excludes connection set-up; the percentiles come from its log.
            long processed = firstLong(PROCESSED, result.output, fromLog.operations());
            // Counted from the process's start, as its CPU time is.
            ClientCost cost = ClientProcess.costPerOperation(result.cpu.toNanos(), Optional.of(ClientProcess.Reading.AT_START),
                    result.process, processed);
            return new Measurement(processed, tps, fromLog.p50Millis(), fromLog.p99Millis(), cost,
                    fromLog.errors(), fromLog.firstError());
        } finally {
            deleteTree(logDirectory);
        }
    }

    /** How pgbench ended, what it printed, and the CPU time (and {@link ClientProcess} reading) it had when last seen alive. */
    private record Result(int exitCode, String output, Duration cpu, Optional<ClientProcess.Reading> process) {
    }

    private Result pgbench(Path scriptFile, int clients, Duration duration, Map<String, String> variables, Path logPrefix)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(executable, "--no-vacuum", "--protocol=prepared",
                "--client=" + clients, "--jobs=" + Math.min(clients, Runtime.getRuntime().availableProcessors()),
                "--time=" + duration.toSeconds(), "--file=" + scriptFile));
        variables.forEach((name, value) -> command.add("--define=" + name + "=" + value));
        if (logPrefix != null) {
            command.add("--log");
            command.add("--log-prefix=" + logPrefix);
        }
        Path output = Files.createTempFile(workDirectory, "out-", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().putAll(environment);
        Process process = builder.start();
        long deadline = System.nanoTime() + duration.plus(OVERRUN).toNanos();
        Duration cpu = Duration.ZERO;
        Optional<ClientProcess.Reading> reading = Optional.empty();
        // The CPU time of a process can be read only while it lives: poll it, and lose at most the last poll's worth.
        while (!process.waitFor(CPU_POLL.toMillis(), TimeUnit.MILLISECONDS)) {
            cpu = process.info().totalCpuDuration().orElse(cpu);
            Optional<ClientProcess.Reading> now = ClientProcess.of(process.pid());
            reading = now.isPresent() ? now : reading;
            if (System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new IllegalStateException("pgbench ran " + OVERRUN.toSeconds() + " s past its " + duration.toSeconds()
                        + " s and was killed: " + String.join(" ", command));
            }
        }
        String text = Files.readString(output);
        Files.delete(output);
        return new Result(process.exitValue(), text, cpu, reading);
    }

    /**
     * Reads pgbench's per-transaction log lines, "client transaction latency_us script epoch epoch_us",
     * into {@code latencies}; returns how many lines record a failure instead of a latency.
     */
    private static long readTransactionLog(Path logDirectory, Histogram latencies) throws IOException {
        long failed = 0;
        try (DirectoryStream<Path> logs = Files.newDirectoryStream(logDirectory)) {
            for (Path log : logs) {
                for (String line : Files.readAllLines(log)) {
                    String[] fields = line.trim().split("\\s+");
                    if (fields.length < 3) {
                        continue;
                    }
                    try {
                        long micros = Long.parseLong(fields[2]);
                        latencies.recordValue(Math.max(1_000L, Math.min(micros * 1_000L, latencies.getHighestTrackableValue())));
                    } catch (NumberFormatException e) {
                        failed++;
                    }
                }
            }
        }
        return failed;
    }

    private static Measurement failed(Result result) {
        String output = result.output.strip();
        String tail = output.length() > 600 ? output.substring(output.length() - 600) : output;
        return new Measurement(0, 0, 0, 0, ClientCost.NONE, 1, "pgbench exited with " + result.exitCode + ": " + tail);
    }

    private static String first(Pattern pattern, String text, String otherwise) {
        Matcher matcher = pattern.matcher(text);
        return matcher.find() ? matcher.group(1) : otherwise;
    }

    private static long firstLong(Pattern pattern, String text, long otherwise) {
        return Long.parseLong(first(pattern, text, Long.toString(otherwise)));
    }

    /** Removes the scripts and logs this runner wrote. */
    public void deleteFiles() {
        deleteTree(workDirectory);
    }

    private static void deleteTree(Path root) {
        try (var paths = Files.walk(root)) {
            paths.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // Temporary files only; the OS cleans its temp directory.
        }
    }
}

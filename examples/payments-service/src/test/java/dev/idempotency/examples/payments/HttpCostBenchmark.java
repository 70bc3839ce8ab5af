package dev.idempotency.examples.payments;

import dev.idempotency.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A program, not a test: the cost of the Idempotency-Key filter in the example service, over real
 * HTTP on loopback. One application; closed loops of {@code callers} clients for {@code seconds} each:
 * the same payment POST without the filter, the keyed POST (a new key per request: claim, payment,
 * audit row, outbox event, stored response), and a replay of one stored key. Prints a Markdown table.
 *
 * <pre>
 * mvn -B -ntp -q -pl examples/payments-service -am test-compile dependency:build-classpath \
 *     -Dmdep.outputFile=/tmp/payments-cp.txt -Dmdep.includeScope=test
 * java -cp examples/payments-service/target/test-classes:examples/payments-service/target/classes:$(cat /tmp/payments-cp.txt) \
 *     dev.idempotency.examples.payments.HttpCostBenchmark [callers] [seconds]
 * </pre>
 * The relay is off, so publishing does not compete for the two cores; the schema is dropped at the end.
 */
public final class HttpCostBenchmark {
    private static final String BODY = "{\"payer\":\"bench\",\"amount\":1250,\"currency\":\"EUR\"}";

    private HttpCostBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int callers = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        String schema = "payments_bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        TestDatabase database = TestDatabase.get();
        ConfigurableApplicationContext application = new SpringApplicationBuilder(PaymentsApplication.class)
                .run("--server.port=0", "--spring.datasource.url=" + database.url(),
                        "--spring.datasource.hikari.schema=" + schema, "--spring.flyway.schemas=" + schema,
                        "--spring.flyway.default-schema=" + schema, "--idempotency.schema=" + schema,
                        "--idempotency.relay.enabled=false", "--logging.level.root=WARN");
        try {
            String base = "http://127.0.0.1:" + application.getEnvironment().getProperty("local.server.port");
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            String replayKey = "\"" + UUID.randomUUID() + "\"";
            send(client, base + "/payments", replayKey);
            // Warm-up of every path, then the measured runs.
            for (int round = 0; round < 2; round++) {
                boolean measured = round == 1;
                int duration = measured ? seconds : Math.max(3, seconds / 2);
                Result plain = load(callers, duration, () -> send(client, base + "/bench/plain-payments", null));
                Result keyed = load(callers, duration,
                        () -> send(client, base + "/payments", "\"" + UUID.randomUUID() + "\""));
                Result replay = load(callers, duration, () -> send(client, base + "/payments", replayKey));
                if (measured) {
                    System.out.printf("%n%d callers, %d s each, Spring Boot 4.1.2, one application on loopback%n%n",
                            callers, seconds);
                    System.out.println("|request|req/s|p50 ms|p99 ms|compared with the POST without the filter|");
                    System.out.println("|---|---:|---:|---:|---|");
                    System.out.println(plain.row("POST without the filter: payment + audit row", null));
                    System.out.println(keyed.row("keyed POST, first run: + key, outbox event, stored response", plain));
                    System.out.println(replay.row("keyed POST, replay of a stored response", plain));
                }
            }
        } finally {
            application.close();
            database.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    private static int send(HttpClient client, String url, String key) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(BODY));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        int status = client.send(request.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        if (status != 201) {
            throw new IllegalStateException(url + " answered " + status);
        }
        return status;
    }

    @FunctionalInterface
    private interface Call {
        int run() throws Exception;
    }

    private static Result load(int callers, int seconds, Call call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        AtomicLong count = new AtomicLong();
        List<Future<long[]>> futures = new ArrayList<>();
        for (int i = 0; i < callers; i++) {
            futures.add(pool.submit(() -> {
                long[] latencies = new long[1 << 16];
                int n = 0;
                while (System.nanoTime() < end) {
                    long start = System.nanoTime();
                    call.run();
                    if (n == latencies.length) {
                        latencies = Arrays.copyOf(latencies, n * 2);
                    }
                    latencies[n++] = System.nanoTime() - start;
                    count.incrementAndGet();
                }
                return Arrays.copyOf(latencies, n);
            }));
        }
        List<Long> all = new ArrayList<>();
        for (Future<long[]> future : futures) {
            for (long latency : future.get()) {
                all.add(latency);
            }
        }
        pool.shutdown();
        long[] sorted = all.stream().mapToLong(Long::longValue).sorted().toArray();
        return new Result(count.get() / (double) seconds, percentile(sorted, 0.50), percentile(sorted, 0.99));
    }

    private static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6;
    }

    private record Result(double perSecond, double p50, double p99) {
        String row(String name, Result base) {
            String compared = base == null ? "-" : String.format("p50 %+.3f ms, p99 %+.3f ms; req/s %.2f of it",
                    p50 - base.p50, p99 - base.p99, perSecond / base.perSecond);
            return String.format("|%s|%.0f|%.3f|%.3f|%s|", name, perSecond, p50, p99, compared);
        }
    }
}

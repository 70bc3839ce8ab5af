package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.EarlierSchema;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The executor on two schemas migrated to two versions, compared where a shared machine's noise cannot
 * tell them apart cell by cell: every caller picks one of the two executors at random for each call, as
 * {@code sql-pair.sh} has pgbench pick a script, so both see the machine at the same moments. Each call
 * is section 1's (a payment row and one outbox event, a fresh key). Prints each round's calls/s and mean
 * latency per schema and the median of the rounds' latency ratios b/a; the schemas are dropped after.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar dev.idempotency.benchmarks.ExecutorPair 6 latest 8 3 15</pre>
 *
 * Arguments: version a, version b (a migration version, or {@code latest}), callers, rounds, seconds per
 * round (after a first, unreported round of 20 s for the JIT). Connects to IDEMPOTENCY_JDBC_URL, by
 * default {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}.
 */
public final class ExecutorPair {
    private static final int WARM_UP_SECONDS = 20;

    private ExecutorPair() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ExecutorPair <version a> <version b> <callers> <rounds> <seconds per round>");
            System.exit(2);
        }
        String url = System.getenv().getOrDefault("IDEMPOTENCY_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
        int callers = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        int seconds = Integer.parseInt(args[4]);
        String run = "executor_pair_" + ProcessHandle.current().pid();
        try (HikariDataSource admin = pool(url, 2); HikariDataSource pool = pool(url, callers)) {
            EarlierSchema a = EarlierSchema.create(admin, run + "_a", args[0], BenchmarkSql.TRUNCATE_TABLES);
            EarlierSchema b = EarlierSchema.create(admin, run + "_b", args[1], BenchmarkSql.TRUNCATE_TABLES);
            try {
                List<Side> sides = List.of(new Side(pool, a), new Side(pool, b));
                List<Double> ratios = new ArrayList<>();
                for (int round = 0; round <= rounds; round++) {
                    a.reset();
                    b.reset();
                    int window = round == 0 ? WARM_UP_SECONDS : seconds;
                    sides.forEach(Side::clear);
                    load(sides, callers, window);
                    if (round > 0) {
                        Side sa = sides.get(0);
                        Side sb = sides.get(1);
                        double ratio = sb.meanMillis() / sa.meanMillis();
                        ratios.add(ratio);
                        System.out.printf(Locale.ROOT, "round=%d callers=%d a (%s): %.0f calls/s, mean %.3f ms;"
                                        + " b (%s): %.0f calls/s, mean %.3f ms; b/a latency %.3f%n", round, callers, args[0],
                                sa.calls() / (double) window, sa.meanMillis(), args[1], sb.calls() / (double) window,
                                sb.meanMillis(), ratio);
                    }
                }
                Collections.sort(ratios);
                System.out.printf(Locale.ROOT, "median b/a latency over %d rounds: %.3f%n", rounds, ratios.get(rounds / 2));
            } finally {
                a.drop();
                b.drop();
            }
        }
    }

    /** One schema's executor and what its calls took in the current round. */
    private static final class Side {
        private final PostgresIdempotentExecutor executor;
        private final String insertPayment;
        private final LongAdder calls = new LongAdder();
        private final LongAdder nanos = new LongAdder();

        Side(HikariDataSource pool, EarlierSchema schema) {
            this.executor = PostgresIdempotentExecutor.builder(pool).config(schema.executorConfig()).build();
            this.insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, schema.schema());
        }

        void call() {
            long started = System.nanoTime();
            PaymentCalls.executorCall(executor, insertPayment, PaymentCalls.freshKey());
            nanos.add(System.nanoTime() - started);
            calls.increment();
        }

        void clear() {
            calls.reset();
            nanos.reset();
        }

        long calls() {
            return calls.sum();
        }

        double meanMillis() {
            return nanos.sum() / 1e6 / calls.sum();
        }
    }

    /** {@code callers} threads, each calling one side or the other at random until {@code seconds} have passed. */
    private static void load(List<Side> sides, int callers, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        ExecutorService threads = Executors.newFixedThreadPool(callers);
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                running.add(threads.submit(() -> {
                    while (System.nanoTime() < end) {
                        sides.get(ThreadLocalRandom.current().nextInt(sides.size())).call();
                    }
                    return null;
                }));
            }
            for (Future<?> caller : running) {
                caller.get(seconds + 60L, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static HikariDataSource pool(String url, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setPoolName("executor-pair");
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        return new HikariDataSource(config);
    }
}

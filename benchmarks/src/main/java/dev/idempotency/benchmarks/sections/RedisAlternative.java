package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSettings;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClosedLoopLoad;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;

/**
 * Section 3: the executor against the common alternative, a Redis idempotency check
 * ({@link RedisIdempotency}) around a Jdbi transaction that writes the same effects: the payment row
 * and an outbox event row. Target: the executor's fully transactional path is no slower (ours/Redis
 * throughput at least 1.00).
 */
final class RedisAlternative implements Section {
    static final double THROUGHPUT_FLOOR = 1.0;
    static final String REDIS_CELL = "Redis SET NX + Lua around Jdbi tx: payment + outbox row";

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public String title() {
        return "3 executor vs Redis check";
    }

    /** The executor, then the Redis pattern; refused at once, saying what to do, when Redis does not answer. */
    @Override
    public List<BenchmarkRun.Cell> cells(BenchmarkRun run, int callers) {
        try (JedisPool setup = new JedisPool(run.settings().redisUri()); Jedis jedis = setup.getResource()) {
            run.note("Section 3: " + describe(jedis, run.settings()));
        } catch (RuntimeException e) {
            throw new IllegalStateException("Redis at " + run.settings().redisUri() + " does not answer ("
                    + e.getMessage() + "); start it, or pass --redis-url, or leave out --sections redis", e);
        }
        return List.of(PaymentCalls.executorCell(run, callers),
                new BenchmarkRun.Cell(REDIS_CELL, callers, () -> measure(run, callers)));
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            List<Measurement> measured = run.interleaved(cells(run, callers));
            Measurement ours = measured.get(0);
            Measurement theirs = measured.get(1);
            double throughput = Targets.ratio(ours.opsPerSecond(), theirs.opsPerSecond());
            rows.add(ResultRow.of(title(), PaymentCalls.EXECUTOR_CELL, callers, ours));
            rows.add(ResultRow.of(title(), REDIS_CELL, callers, theirs)
                    .compared(Targets.oursOverThis(ours, theirs))
                    .target(Targets.atLeast("ops ratio", throughput, THROUGHPUT_FLOOR)));
        }
        return rows;
    }

    /** One measurement of the Redis pattern; its keys go under a prefix of their own, deleted afterwards. */
    private static Measurement measure(BenchmarkRun run, int callers) throws Exception {
        JedisPoolConfig poolConfig = new JedisPoolConfig();
        poolConfig.setMaxTotal(callers);
        poolConfig.setMaxIdle(callers);
        poolConfig.setMinIdle(callers);
        poolConfig.setMaxWait(Duration.ofSeconds(30));
        try (JedisPool redisPool = new JedisPool(poolConfig, run.settings().redisUri());
             HikariDataSource pool = run.database().pool("redis-" + callers, callers)) {
            RedisIdempotency redis;
            try (Jedis jedis = redisPool.getResource()) {
                redis = new RedisIdempotency(jedis, "idempotency-bench:" + UUID.randomUUID().toString().substring(0, 8) + ":",
                        run.executorConfig().retention());
            }
            try {
                return load(run, redisPool, pool, redis, callers);
            } finally {
                try (Jedis jedis = redisPool.getResource()) {
                    redis.deleteAll(jedis);
                }
            }
        }
    }

    private static Measurement load(BenchmarkRun run, JedisPool redisPool, HikariDataSource pool, RedisIdempotency redis,
                                    int callers) throws Exception {
        Jdbi jdbi = PaymentCalls.jdbi(pool);
        String schema = run.database().schema();
        String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, schema);
        String insertEvent = BenchmarkSql.render(BenchmarkSql.INSERT_OUTBOX_EVENT, schema);
        String payload = "{\"amount\":1}";
        return ClosedLoopLoad.run("redis", callers, run.settings().callerThreads(), run.warmup(REDIS_CELL),
                run.settings().window(), () -> {
            String key = PaymentCalls.freshKey();
            long amount = PaymentCalls.amount();
            try (Jedis jedis = redisPool.getResource()) {
                RedisIdempotency.Claim claim = redis.claim(jedis, PaymentCalls.TENANT, key);
                if (!claim.claimed()) {
                    throw new IllegalStateException("a fresh key " + key + " was already claimed in Redis");
                }
                try {
                    jdbi.useTransaction(h -> {
                        h.createUpdate(insertPayment).bind("tenant", PaymentCalls.TENANT).bind("amount", amount).execute();
                        h.createUpdate(insertEvent).bind("tenant", PaymentCalls.TENANT).bind("topic", PaymentCalls.TOPIC)
                                .bind("partitionKey", Long.toString(amount)).bind("payload", payload).execute();
                    });
                } catch (RuntimeException e) {
                    redis.release(jedis, PaymentCalls.TENANT, key, claim.token());
                    throw e;
                }
                if (!redis.complete(jedis, PaymentCalls.TENANT, key, claim.token(), Long.toString(amount))) {
                    throw new IllegalStateException("the Redis claim on " + key + " was lost before its response was stored");
                }
            }
        });
    }

    /** Redis's version and persistence settings: without AOF fsync its claims are not durable. */
    private static String describe(Jedis jedis, BenchmarkSettings settings) {
        String version = "?";
        for (String line : jedis.info("server").split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                version = line.substring("redis_version:".length()).trim();
            }
        }
        String persistence;
        try {
            Map<String, String> config = jedis.configGet("appendonly");
            Map<String, String> fsync = jedis.configGet("appendfsync");
            Map<String, String> save = jedis.configGet("save");
            persistence = "appendonly " + config.getOrDefault("appendonly", "?") + ", appendfsync "
                    + fsync.getOrDefault("appendfsync", "?") + ", save '" + save.getOrDefault("save", "?") + "'";
        } catch (RuntimeException e) {
            persistence = "persistence settings unreadable (CONFIG GET refused)";
        }
        return "Redis " + version + " at " + settings.redisUri() + " (" + persistence + "); the Redis variant writes "
                + "the same payment and outbox rows, in a Jdbi transaction between SET NX and the Lua store.";
    }
}

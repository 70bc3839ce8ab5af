package dev.idempotency.jdbc;

import dev.idempotency.core.LeaseRequest;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import java.time.Duration;

/**
 * A separate JVM for the crash test: takes a lease on a key, says so on stdout, and hangs inside
 * the external step until the test kills it with SIGKILL.
 */
public final class LeaseHolderProcess {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        String schema = args[1];
        String key = args[2];
        long leaseMillis = Long.parseLong(args[3]);
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl(url);
        if (args.length > 4) {
            pool.setUsername(args[4]);
        }
        if (args.length > 5) {
            pool.setPassword(args[5]);
        }
        pool.setMaximumPoolSize(2);
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool)
                .config(IdempotencyConfig.builder().schema(schema).build())
                .build();
        executor.runWithLease(
                LeaseRequest.builder(key, "t1").lease(Duration.ofMillis(leaseMillis)).resultType(String.class).build(),
                lease -> {
            System.out.println("CLAIMED " + lease.fencingToken());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
            return "never";
        }, (tx, external) -> external);
    }
}

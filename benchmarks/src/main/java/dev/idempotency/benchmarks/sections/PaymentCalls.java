package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClosedLoopLoad;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.Pgbench;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.SerializableTransactionRunner;
import org.jdbi.v3.postgres.PostgresPlugin;

/**
 * The business call every section measures, in its two Java forms: through the executor (one
 * payment row and one outbox event, idempotent) and as a bare Jdbi transaction (the payment row
 * alone). Amounts, partition keys and keys are drawn as the pgbench scripts draw them.
 */
final class PaymentCalls {
    static final String TENANT = "t1";
    static final String TOPIC = "payments";
    /** The executor cell's name, shared by every section that compares against it. */
    static final String EXECUTOR_CELL = "executor.run: payment + outbox event";
    /**
     * The same executor where pgjdbc sends the transaction's BEGIN (a simple query ahead of the claim),
     * as every call did before the claim carried it: its Jdbi has another transaction handler.
     */
    static final String PGJDBC_BEGIN_CELL = "executor.run, pgjdbc's BEGIN (another Jdbi transaction handler)";
    /**
     * The same executor whose callback sends the payment insert on plain JDBC (the handle's connection)
     * instead of through Jdbi: what the executor costs without Jdbi's per-statement work in the callback.
     */
    static final String PLAIN_JDBC_CALLBACK_CELL = "executor.run, the callback's insert on plain JDBC";
    static final String BARE_CELL = "bare Jdbi tx: payment";

    private PaymentCalls() {
    }

    /** A payment amount, 1 to 100000; also the event's partition key, as in the scripts. */
    static long amount() {
        return ThreadLocalRandom.current().nextLong(1, 100_001);
    }

    /** A fresh idempotency key from the scripts' range, so no two calls of a run share one. */
    static String freshKey() {
        return Long.toString(ThreadLocalRandom.current().nextLong(1, 9_000_000_000_000_000_001L));
    }

    /** One idempotent payment through {@code executor}: first runs only, a replay is an error. */
    static void executorCall(PostgresIdempotentExecutor executor, String insertPayment, String key) {
        requireFirstRun(executorPayment(executor, insertPayment, key), key);
    }

    private static void requireFirstRun(Outcome<Long> outcome, String key) {
        if (outcome.replayed()) {
            throw new IllegalStateException("a fresh key " + key + " was replayed");
        }
    }

    /**
     * A Jdbi for the cells that run the business insert without the executor, configured as the
     * executor's is (with the PostgreSQL plugin), so that insert costs the same on every side.
     */
    static Jdbi jdbi(DataSource pool) {
        return Jdbi.create(pool).installPlugin(new PostgresPlugin());
    }

    /** The executor's call with {@code key}: the payment row, one outbox event, the amount as result. */
    static Outcome<Long> executorPayment(PostgresIdempotentExecutor executor, String insertPayment, String key) {
        return executorPayment(executor, insertPayment, key, () -> { });
    }

    /** {@link #executorPayment}, whose callback, if it runs, first runs {@code beforeInsert}. */
    static Outcome<Long> executorPayment(PostgresIdempotentExecutor executor, String insertPayment, String key,
                                         Runnable beforeInsert) {
        return payment(executor, key, beforeInsert, (tx, amount) ->
                tx.handle().createUpdate(insertPayment).bind("tenant", TENANT).bind("amount", amount).execute());
    }

    /**
     * {@link #executorCall} with the payment inserted through a JDBC statement on the handle's
     * connection, as a callback tuned for speed would; {@code insertPayment} has {@code ?} parameters.
     */
    static void executorCallOnPlainJdbc(PostgresIdempotentExecutor executor, String insertPayment, String key)
            throws SQLException {
        requireFirstRun(payment(executor, key, () -> { }, (tx, amount) -> {
            try (PreparedStatement insert = tx.handle().getConnection().prepareStatement(insertPayment)) {
                insert.setString(1, TENANT);
                insert.setLong(2, amount);
                insert.executeUpdate();
            }
        }), key);
    }

    /** How a callback inserts the payment row of {@code amount}. */
    @FunctionalInterface
    private interface PaymentInsert<X extends Exception> {
        void insert(PostgresTransaction tx, long amount) throws X;
    }

    /** The executor's call with {@code key}: {@code beforeInsert}, the payment row, one outbox event, the amount as result. */
    private static <X extends Exception> Outcome<Long> payment(PostgresIdempotentExecutor executor, String key,
                                                               Runnable beforeInsert, PaymentInsert<X> insert) throws X {
        long amount = amount();
        return executor.run(key, TENANT, Long.class, tx -> {
            beforeInsert.run();
            insert.insert(tx, amount);
            tx.outbox().publish(TOPIC, Long.toString(amount), Map.of("amount", amount));
            return amount;
        });
    }

    /** The executor at {@code callers} concurrent callers, on a pool of as many connections. */
    static Measurement executor(BenchmarkRun run, int callers) throws Exception {
        return run.cell(executorCell(run, callers));
    }

    /** The cell of {@link #executor}, to measure interleaved with the cells it is compared with. */
    static BenchmarkRun.Cell executorCell(BenchmarkRun run, int callers) {
        return executorCell(run, callers, EXECUTOR_CELL, "executor", PostgresIdempotentExecutor::builder);
    }

    /** The executor's cell with pgjdbc sending each transaction's BEGIN ({@link #PGJDBC_BEGIN_CELL}). */
    static BenchmarkRun.Cell pgjdbcBeginCell(BenchmarkRun run, int callers) {
        return executorCell(run, callers, PGJDBC_BEGIN_CELL, "executor-pgjdbc-begin", pool ->
                PostgresIdempotentExecutor.builder(jdbi(pool).setTransactionHandler(new SerializableTransactionRunner())));
    }

    /** The executor's cell with the callback's insert on plain JDBC ({@link #PLAIN_JDBC_CALLBACK_CELL}). */
    static BenchmarkRun.Cell plainJdbcCallbackCell(BenchmarkRun run, int callers) {
        return executorCell(run, callers, PLAIN_JDBC_CALLBACK_CELL, "executor-plain-jdbc", run.database()::pool,
                PostgresIdempotentExecutor::builder, BenchmarkSql.INSERT_PAYMENT_POSITIONAL, PaymentCalls::executorCallOnPlainJdbc);
    }

    private static BenchmarkRun.Cell executorCell(BenchmarkRun run, int callers, String name, String poolName,
                                                  Function<HikariDataSource, PostgresIdempotentExecutor.Builder> builder) {
        return executorCell(run, callers, name, poolName, run.database()::pool, builder, BenchmarkSql.INSERT_PAYMENT,
                PaymentCalls::executorCall);
    }

    /**
     * The executor's cell on another schema of the run (a comparison schema with earlier migrations, say)
     * holding the library's tables and a payments table, with the library's defaults on it.
     */
    static BenchmarkRun.Cell executorCellOn(BenchmarkRun run, int callers, String name, String poolName,
                                            String schema, IdempotencyConfig config) {
        return executorCell(run, callers, name, poolName, run.database()::pool, PostgresIdempotentExecutor::builder,
                schema, config, BenchmarkSql.INSERT_PAYMENT, PaymentCalls::executorCall);
    }

    /** The executor's cell on connections to {@code jdbcUrl} (the same database through a pooler, say). */
    static BenchmarkRun.Cell executorCellAt(BenchmarkRun run, int callers, String name, String poolName, String jdbcUrl) {
        return executorCell(run, callers, name, poolName, (cellName, size) -> run.database().pool(jdbcUrl, cellName, size),
                PostgresIdempotentExecutor::builder, BenchmarkSql.INSERT_PAYMENT, PaymentCalls::executorCall);
    }

    /** One executor call with a fresh key, given the rendered payment insert. */
    @FunctionalInterface
    interface ExecutorCall {
        void call(PostgresIdempotentExecutor executor, String insertPayment, String key) throws Exception;
    }

    /** Opens a cell's pool of {@code size} connections under {@code name}. */
    @FunctionalInterface
    private interface PoolOpener {
        HikariDataSource open(String name, int size);
    }

    /** The executor's cell built by {@code builder}, each call made by {@code call} (section 13 wraps it in a span). */
    static BenchmarkRun.Cell executorCell(BenchmarkRun run, int callers, String name, String poolName,
                                          Function<HikariDataSource, PostgresIdempotentExecutor.Builder> builder,
                                          ExecutorCall call) {
        return executorCell(run, callers, name, poolName, run.database()::pool, builder, BenchmarkSql.INSERT_PAYMENT, call);
    }

    private static BenchmarkRun.Cell executorCell(BenchmarkRun run, int callers, String name, String poolName, PoolOpener pools,
                                                  Function<HikariDataSource, PostgresIdempotentExecutor.Builder> builder,
                                                  String insertPaymentTemplate, ExecutorCall call) {
        return executorCell(run, callers, name, poolName, pools, builder, run.database().schema(), run.executorConfig(),
                insertPaymentTemplate, call);
    }

    private static BenchmarkRun.Cell executorCell(BenchmarkRun run, int callers, String name, String poolName, PoolOpener pools,
                                                  Function<HikariDataSource, PostgresIdempotentExecutor.Builder> builder,
                                                  String schema, IdempotencyConfig config,
                                                  String insertPaymentTemplate, ExecutorCall call) {
        return new BenchmarkRun.Cell(name, callers, () -> {
            try (HikariDataSource pool = pools.open(poolName + "-" + callers, callers)) {
                PostgresIdempotentExecutor executor = builder.apply(pool).config(config).build();
                String insertPayment = BenchmarkSql.render(insertPaymentTemplate, schema);
                return ClosedLoopLoad.run(poolName, callers, run.settings().callerThreads(), run.warmup(name),
                        run.settings().window(), () -> call.call(executor, insertPayment, freshKey()));
            }
        });
    }

    /** The payment insert alone in a Jdbi transaction, at {@code callers} callers. */
    static BenchmarkRun.Cell bareCell(BenchmarkRun run, int callers) {
        return new BenchmarkRun.Cell(BARE_CELL, callers, () -> {
            try (HikariDataSource pool = run.database().pool("bare-" + callers, callers)) {
                Jdbi jdbi = jdbi(pool);
                String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
                return ClosedLoopLoad.run("bare", callers, run.settings().callerThreads(), run.warmup(BARE_CELL),
                        run.settings().window(), () -> jdbi.useTransaction(h -> h.createUpdate(insertPayment)
                                .bind("tenant", TENANT).bind("amount", amount()).execute()));
            }
        });
    }

    /** A pgbench script at {@code callers} clients, with the values the Java side binds. */
    static BenchmarkRun.Cell pgbenchCell(BenchmarkRun run, String script, int callers) {
        return pgbenchCell(run, run.pgbench(), "pgbench " + script, script, callers);
    }

    /** {@link #pgbenchCell(BenchmarkRun, String, int)} run by {@code pgbench} (connecting elsewhere, say), as cell {@code name}. */
    static BenchmarkRun.Cell pgbenchCell(BenchmarkRun run, Pgbench pgbench, String name, String script, int callers) {
        return new BenchmarkRun.Cell(name, callers, () -> pgbench.run(script, callers,
                run.settings().warmup(), run.settings().window(), pgbenchVariables(run)));
    }

    /** What executor.sql binds, from the same configuration the Java executor runs with. */
    static Map<String, String> pgbenchVariables(BenchmarkRun run) {
        return Map.of(
                "tenant", TENANT,
                // PostgresIdempotentExecutor sets lock_timeout to the wait budget in milliseconds, at least 1.
                "waitbudget", Math.max(1, run.executorConfig().waitBudget().toMillis()) + "ms",
                "retention", Long.toString(run.executorConfig().retention().toSeconds()),
                // ExecutorSql.OUTBOX_LOCK_SPACE (0x1DE30B0C), the first key of the outbox's advisory locks.
                "lockspace", "501418764",
                "topic", TOPIC,
                "payload", "{\"amount\":1}",
                "headers", "{}",
                "resulttype", Long.class.getName());
    }
}

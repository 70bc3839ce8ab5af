package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxBacklog;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.jdbi.v3.core.Jdbi;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Applies the migrations, fires concurrent duplicate "payments" through the executor, and prints
 * what it saw: every request answered, one execution and one outbox event per payment.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Fire concurrent duplicate payments through the executor and count what happened.")
final class DemoCommand implements Callable<Integer> {
    /** What a payment call returns, stored once and replayed to every duplicate. */
    record Receipt(long paymentId, long cents) {
    }

    @Mixin
    DatabaseOptions database;

    @Spec
    CommandSpec spec;

    @Option(names = "--payments", defaultValue = "200", description = "Distinct payments (default: ${DEFAULT-VALUE}).")
    int payments;

    @Option(names = "--copies", defaultValue = "5", description = "Requests sent per payment, all at once (default: ${DEFAULT-VALUE}).")
    int copies;

    @Option(names = "--threads", defaultValue = "16", description = "Concurrent callers (default: ${DEFAULT-VALUE}).")
    int threads;

    @Override
    public Integer call() throws Exception {
        try (EmbeddedDatabase embedded = database.embeddedIfNoServer();
             HikariDataSource pool = database.pool("demo", threads + 1)) {
            IdempotencyMigrations.migrate(pool, database.schema);
            Jdbi jdbi = Jdbi.create(pool);
            jdbi.useHandle(h -> h.execute("CREATE TABLE IF NOT EXISTS \"" + database.schema + "\".demo_payments "
                    + "(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, request_key text NOT NULL, cents bigint NOT NULL)"));
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool)
                    .config(IdempotencyConfig.builder().schema(database.schema).build())
                    .build();

            String run = "demo-" + UUID.randomUUID().toString().substring(0, 8);
            List<String> requests = new ArrayList<>();
            for (int p = 0; p < payments; p++) {
                for (int c = 0; c < copies; c++) {
                    requests.add(run + "-payment-" + p);
                }
            }
            Collections.shuffle(requests);

            AtomicInteger executions = new AtomicInteger();
            AtomicInteger replays = new AtomicInteger();
            AtomicInteger inProgress = new AtomicInteger();
            String table = "\"" + database.schema + "\".demo_payments";
            ExecutorService callers = Executors.newFixedThreadPool(threads);
            List<Future<?>> calls = new ArrayList<>();
            long started = System.nanoTime();
            for (String key : requests) {
                long cents = 100 + Math.floorMod(key.hashCode(), 900);
                calls.add(callers.submit(() -> {
                    try {
                        Outcome<Receipt> outcome = executor.run(key, "demo-tenant",
                                RequestFingerprint.ofJson(Map.of("cents", cents)), Receipt.class, tx -> {
                                    executions.incrementAndGet();
                                    long id = tx.handle().createUpdate("INSERT INTO " + table + " (request_key, cents) VALUES (:k, :c)")
                                            .bind("k", key).bind("c", cents)
                                            .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
                                    tx.outbox().publish("payments", key, Map.of("paymentId", id, "cents", cents));
                                    return new Receipt(id, cents);
                                });
                        if (outcome.replayed()) {
                            replays.incrementAndGet();
                        }
                    } catch (KeyInProgressException e) {
                        inProgress.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> call : calls) {
                call.get();
            }
            callers.shutdown();
            long millis = (System.nanoTime() - started) / 1_000_000;

            long paymentRows = jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM " + table + " WHERE request_key LIKE :run")
                    .bind("run", run + "-%").mapTo(Long.class).one());
            long outboxRows = jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM \"" + database.schema
                            + "\".outbox_events WHERE partition_key LIKE :run").bind("run", run + "-%").mapTo(Long.class).one());
            long pending = OutboxBacklog.builder(pool).schema(database.schema).build().pendingCount();

            PrintWriter out = spec.commandLine().getOut();
            // The URL may carry a password (password=...); what is printed ends up in terminals and CI logs.
            out.printf("demo run %s against %s%s (schema %s)%n", run, JdbcUrls.redacted(database.url()),
                    embedded == null ? "" : " (embedded)", database.schema);
            out.printf("  requests sent            %6d  (%d payments x %d copies, %d threads, %d ms)%n",
                    requests.size(), payments, copies, threads, millis);
            out.printf("  callback executions      %6d%n", executions.get());
            out.printf("  replays                  %6d%n", replays.get());
            out.printf("  in progress (HTTP 409)   %6d%n", inProgress.get());
            out.printf("  payment rows written     %6d%n", paymentRows);
            out.printf("  outbox events written    %6d  (%d pending in the outbox for the relay)%n", outboxRows, pending);
            boolean exact = executions.get() == payments && paymentRows == payments && outboxRows == payments
                    && executions.get() + replays.get() + inProgress.get() == requests.size();
            out.println(exact ? "  every payment charged exactly once" : "  MISMATCH: see the counts above");
            return exact ? 0 : 1;
        }
    }
}

package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkDatabase;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSettings;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.Pgbench;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * pgbench's executor.sql claims to send the executor's statements; this checks the part a test can
 * see: it leaves rows of exactly the shape executor.run leaves (key state, result, lease and expiry
 * columns, outbox event columns), so a change to what the executor writes shows up here.
 */
class ExecutorScriptMirrorTest {
    /** One line per distinct row shape in the run's tables. */
    private static final String ROW_SHAPES = """
            SELECT DISTINCT concat_ws(' | ', 'key', status, request_fingerprint IS NULL, result_type,
                   jsonb_typeof(result), failure IS NULL, lease_token IS NULL, lease_expires_at IS NULL,
                   expires_at - created_at, updated_at >= created_at)
            FROM <schema>.idempotency_keys
            UNION
            SELECT DISTINCT concat_ws(' | ', 'event', e.tenant_id, e.topic, e.partition_key ~ '^[0-9]+$', jsonb_typeof(e.payload),
                   e.payload -> 'amount' IS NOT NULL, e.headers::text, e.message_id IS NULL, e.generation = g.current_generation,
                   s.status, s.attempts, s.last_error IS NULL)
            FROM <schema>.outbox_events e
            JOIN <schema>.outbox_event_states s ON s.id = e.id
            CROSS JOIN <schema>.outbox_generation g
            UNION
            SELECT DISTINCT concat_ws(' | ', 'payment', tenant_id, amount BETWEEN 1 AND 100000)
            FROM <schema>.payments
            UNION
            SELECT concat_ws(' | ', 'counts', (SELECT count(*) FROM <schema>.idempotency_keys)
                   = (SELECT count(*) FROM <schema>.outbox_events),
                   (SELECT count(*) FROM <schema>.outbox_events) = (SELECT count(*) FROM <schema>.payments))""";

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void pgbenchExecutorScriptLeavesTheRowsExecutorRunLeaves() throws Exception {
        TestDatabase server = TestDatabase.get();
        BenchmarkSettings settings = BenchmarkSettings.builder().sections(List.of("pgbench"))
                .jdbcUrl(server.url()).dbUser(server.user()).dbPassword(server.password()).build();
        try (BenchmarkDatabase database = BenchmarkDatabase.create(settings)) {
            Pgbench pgbench = new Pgbench(settings.pgbenchExecutable(), database.libpqEnvironment(), database.schema());
            BenchmarkRun run = new BenchmarkRun(settings, database, pgbench);
            try (HikariDataSource pool = database.pool("mirror", 2)) {
                Jdbi jdbi = Jdbi.create(pool);
                String shapes = BenchmarkSql.render(ROW_SHAPES, database.schema());

                PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool)
                        .config(run.executorConfig()).build();
                String insertPayment = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, database.schema());
                for (int i = 0; i < 5; i++) {
                    PaymentCalls.executorCall(executor, insertPayment, PaymentCalls.freshKey());
                }
                Set<String> fromExecutor = rowShapes(jdbi, shapes);

                database.reset();
                Measurement scripted = pgbench.run("executor.sql", 1, Duration.ZERO, Duration.ofSeconds(1),
                        PaymentCalls.pgbenchVariables(run));
                Set<String> fromScript = rowShapes(jdbi, shapes);

                assertEquals(0, scripted.errors(), scripted.firstError());
                assertFalse(fromScript.isEmpty());
                assertEquals(fromExecutor, fromScript);
            } finally {
                pgbench.deleteFiles();
            }
        }
    }

    private static Set<String> rowShapes(Jdbi jdbi, String query) {
        List<String> shapes = jdbi.withHandle(h -> h.createQuery(query).mapTo(String.class).list());
        return new TreeSet<>(shapes);
    }
}

package dev.idempotency.spring.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.spring.SpringCallerTransaction;
import dev.idempotency.testing.MigratedSchema;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Runs the README's "Inside your application's transaction" snippet (the region tagged
 * {@code spring-join} below) and fails when the README's code block differs from it.
 */
class ReadmeSpringExampleTest {
    private static final Path MODULE = Path.of(System.getProperty("user.dir"));
    private static final Path SELF = MODULE.resolve(
            "src/test/java/dev/idempotency/spring/examples/ReadmeSpringExampleTest.java");

    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate)
            .afterMigration("CREATE TABLE payments (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                    + "account text NOT NULL, cents bigint NOT NULL, charge_id text)")
            .afterMigration("CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL)")
            .afterMigration("INSERT INTO accounts VALUES ('acc-1', 1000)")
            .build();

    record PaymentCaptured(String account, long cents) {
    }

    /** The snippet: a TransactionTemplate stands for a {@code @Transactional} service method. */
    static Outcome<Long> pay(DataSource dataSource, IdempotencyConfig config, String idempotencyKey, String tenantId,
                             String account, long cents) {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        // tag::spring-join[]
        PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(dataSource)   // Spring's DataSource
                .config(config)
                .joinCallerTransactions(SpringCallerTransaction.builder(dataSource).build())
                .build();

        // In a @Transactional method (here a TransactionTemplate): one transaction, one connection.
        return transactions.execute(status -> executor.run(idempotencyKey, tenantId, Long.class, tx -> {
            // JdbcTemplate, JPA (flush first) and tx.handle() all write in Spring's transaction.
            jdbc.update("UPDATE accounts SET balance = balance - ? WHERE id = ?", cents, account);
            jdbc.update("INSERT INTO payments (account, cents) VALUES (?, ?)", account, cents);
            tx.outbox().publish("payments", account, new PaymentCaptured(account, cents));
            return jdbc.queryForObject("SELECT balance FROM accounts WHERE id = ?", Long.class, account);
        }));
        // end::spring-join[]
    }

    @Test
    void theSnippetDebitsOncePaysOnceAndReplays() {
        IdempotencyConfig config = IdempotencyConfig.builder().schema(db.name()).build();
        JdbcTemplate jdbc = new JdbcTemplate(db.dataSource());

        Outcome<Long> first = pay(db.dataSource(), config, "key-1", "t1", "acc-1", 300);
        Outcome<Long> replay = pay(db.dataSource(), config, "key-1", "t1", "acc-1", 300);

        assertFalse(first.replayed());
        assertEquals(700L, first.result());
        assertTrue(replay.replayed());
        assertEquals(700L, replay.result());
        assertEquals(700L, jdbc.queryForObject("SELECT balance FROM accounts WHERE id = 'acc-1'", Long.class));
        assertEquals(1L, jdbc.queryForObject("SELECT count(*) FROM payments", Long.class));
        assertEquals(1L, jdbc.queryForObject("SELECT count(*) FROM outbox_events", Long.class));
    }

    @Test
    void theReadmeShowsTheSnippet() throws IOException {
        String snippet = normalised(region());
        List<String> blocks = new ArrayList<>();
        Matcher matcher = Pattern.compile("(?m)^```[a-z]*\\n(.*?)^```", Pattern.DOTALL)
                .matcher(Files.readString(MODULE.getParent().resolve("docs/guide.md"), StandardCharsets.UTF_8));
        while (matcher.find()) {
            blocks.add(normalised(matcher.group(1)));
        }
        assertTrue(blocks.contains(snippet), "docs/guide.md has no code block equal to the region tagged spring-join "
                + "(whitespace aside); copy it from " + SELF + " into docs/guide.md, or change both:\n" + region());
    }

    private static String region() throws IOException {
        StringBuilder region = new StringBuilder();
        boolean inside = false;
        for (String line : Files.readAllLines(SELF, StandardCharsets.UTF_8)) {
            if (line.contains("end::spring-join[]")) {
                inside = false;
            } else if (line.contains("tag::spring-join[]") && !line.contains("\"")) {
                inside = true;
            } else if (inside) {
                region.append(line).append('\n');
            }
        }
        return region.toString();
    }

    private static String normalised(String code) {
        return code.strip().replaceAll("\\s+", " ");
    }
}

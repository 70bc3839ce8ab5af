package dev.idempotency.jdbc;

import static dev.idempotency.jdbc.ExecutorFixture.newKey;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import java.time.Duration;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.HashPrefixSqlParser;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An executor built on the caller's Jdbi runs its own statements untouched by that Jdbi's
 * configuration, while the callback's statements follow it: here {@code #name} parameters
 * instead of {@code :name}, and a template engine that refuses the comparison operators the
 * executor's SQL uses (as a strict engine such as StringTemplate would).
 */
class CallersJdbiConfigurationTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(4);
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        Jdbi callers = Jdbi.create(db.schema.dataSource()).installPlugin(new PostgresPlugin())
                .setSqlParser(new HashPrefixSqlParser())
                .setTemplateEngine((template, context) -> {
                    if (template.contains("<=") || template.contains(" > ")) {
                        throw new IllegalArgumentException("this template engine reads '<' and '>' as its own syntax");
                    }
                    return template;
                });
        executor = PostgresIdempotentExecutor.builder(callers)
                .config(IdempotencyConfig.builder().schema(db.schema.name()).build()).build();
    }

    private static long pay(PostgresTransaction tx, long amount) {
        return tx.handle().createUpdate("INSERT INTO payments (tenant_id, request_key, amount) VALUES (#t, #k, #a)")
                .bind("t", tx.tenant()).bind("k", tx.key()).bind("a", amount)
                .executeAndReturnGeneratedKeys("id").mapTo(Long.class).one();
    }

    @Test
    void aCallbackOnAJdbiWithItsOwnParserRunsOnceAndItsResultReplays() {
        String key = newKey();
        Outcome<Long> first = executor.run(key, "t1", Long.class, tx -> pay(tx, 100));
        Outcome<Long> replay = executor.run(key, "t1", Long.class, tx -> pay(tx, 999));

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(first.result(), replay.result());
        assertEquals(1, db.payments(key, "t1"));
    }

    @Test
    void aBusinessFailureOnAJdbiWithItsOwnParserIsStoredAndReplayed() {
        String key = newKey();
        BusinessFailure first = assertThrows(BusinessFailure.class, () -> executor.run(key, "t1", Long.class, tx -> {
            pay(tx, 100);
            throw new BusinessFailure("card_declined", "declined");
        }));
        BusinessFailure replay = assertThrows(BusinessFailure.class,
                () -> executor.run(key, "t1", Long.class, tx -> pay(tx, 100)));

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals("card_declined", replay.code());
        assertEquals(0, db.payments(key, "t1"));
    }

    @Test
    void leaseModeOnAJdbiWithItsOwnParserCompletesAndReplays() {
        String key = newKey();
        LeaseRequest<Long> request = LeaseRequest.builder(key, "t1").lease(Duration.ofSeconds(30))
                .resultType(Long.class).build();
        Outcome<Long> first = executor.runWithLease(request, lease -> 100L, (tx, amount) -> pay(tx, amount));
        Outcome<Long> replay = executor.runWithLease(request, lease -> 999L, (tx, amount) -> pay(tx, amount));

        assertFalse(first.replayed());
        assertTrue(replay.replayed());
        assertEquals(1, db.payments(key, "t1"));
    }
}

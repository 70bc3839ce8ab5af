package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.Outcome;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.jdbc.PostgresTransaction;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Bad input the executor-level tests do not cover: a callback that closes the executor's handle or
 * its connection. The caller gets a clear IllegalStateException saying the callback ended the
 * transaction, no partial rows remain (key, business row, outbox event), and a retry runs once.
 */
@Timeout(60)
class CallbackClosesHandleTest {
    @RegisterExtension
    static final FaultDatabase db = FaultDatabase.perClass();
    private static PostgresIdempotentExecutor executor;

    @BeforeAll
    static void setUp() {
        executor = db.executor("callers", 2, () -> { });
    }

    @Test
    void aCallbackThatClosesTheHandleGetsAClearErrorLeavesNoRowsAndTheRetryRunsOnce() {
        assertClosingIsRefusedCleanly(tx -> tx.handle().close());
    }

    @Test
    void aCallbackThatClosesTheHandleAndSwallowsWhatCloseThrowsGetsAClearErrorAndLeavesNoRows() {
        assertClosingIsRefusedCleanly(tx -> {
            try {
                tx.handle().close();
            } catch (RuntimeException ignored) {
                // A careless callback hides what Jdbi said.
            }
        });
    }

    @Test
    void aCallbackThatClosesTheConnectionGetsAClearErrorLeavesNoRowsAndTheRetryRunsOnce() {
        assertClosingIsRefusedCleanly(tx -> {
            try {
                tx.handle().getConnection().close();
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private void assertClosingIsRefusedCleanly(java.util.function.Consumer<PostgresTransaction> closer) {
        String tenant = "t-" + UUID.randomUUID();
        String key = "close-" + UUID.randomUUID();
        RuntimeException e = assertThrows(RuntimeException.class, () -> executor.run(key, tenant, String.class, tx -> {
            tx.handle().createUpdate("INSERT INTO effects (tenant_id, request_key) VALUES (:t, :k)")
                    .bind("t", tenant).bind("k", key).execute();
            tx.outbox().publish("topic", "pk", Map.of("key", key));
            closer.accept(tx);
            return "closed";
        }));
        assertEquals(0, count("SELECT count(*) FROM effects WHERE tenant_id = :t", tenant), "no business row");
        assertEquals(0, count("SELECT count(*) FROM idempotency_keys WHERE tenant_id = :t", tenant), "no key row");
        assertEquals(0, count("SELECT count(*) FROM outbox_events WHERE tenant_id = :t", tenant), "no outbox event");

        Outcome<String> retry = executor.run(key, tenant, String.class, tx -> "ran");
        assertFalse(retry.replayed(), "the retry runs the callback: nothing was stored for the key");
        assertEquals("ran", retry.result());

        assertEquals(IllegalStateException.class, e.getClass(), "a clear IllegalStateException, not: " + describe(e));
        assertTrue(e.getMessage().contains("callback") && e.getMessage().contains("transaction"), describe(e));
    }

    private static long count(String sql, String tenant) {
        return db.jdbi().withHandle(h -> h.createQuery(sql).bind("t", tenant).mapTo(Long.class).one());
    }

    private static String describe(Throwable e) {
        StringBuilder out = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            out.append(t == e ? "" : " <- ").append(t.getClass().getName()).append(": ").append(t.getMessage());
        }
        return out.toString();
    }
}

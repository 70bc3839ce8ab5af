package dev.idempotency.spring.boot;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the executor's one-time pooler check happen at startup, outside any transaction. The check
 * takes a connection of its own from the pool; at the first request it would do so while the
 * request's Spring transaction already holds one, and a burst of first requests as large as the
 * pool then waits forever for a connection none of them gives back. The warm-up is one call whose
 * callback fails on purpose, so everything it did rolls back: it leaves no row behind.
 */
final class ExecutorWarmUp {
    private static final Logger log = LoggerFactory.getLogger(ExecutorWarmUp.class);

    private ExecutorWarmUp() {
    }

    static void run(PostgresIdempotentExecutor executor) {
        try {
            executor.run("warm-up-" + UUID.randomUUID(), "idempotency-starter", tx -> {
                throw new WarmedUp();
            });
        } catch (WarmedUp expected) {
            log.debug("idempotent executor checked its pool at startup");
        } catch (RuntimeException e) {
            // The database may be starting too: the check then runs at the first call, as without the starter.
            log.warn("idempotent executor could not check its pool at startup; it checks at its first call: {}",
                    e.getMessage());
        }
    }

    /** Rolls the warm-up call back. */
    private static final class WarmedUp extends RuntimeException {
        WarmedUp() {
            super("warm-up", null, false, false);
        }
    }
}

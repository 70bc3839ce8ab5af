package dev.idempotency.spring.boot;

import dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the executor's one-time pooler check happen at startup, outside any transaction. The check
 * takes connections of its own from the pool; at the first request it would do so while the
 * request's Spring transaction already holds one, and a burst of first requests as large as the
 * pool would then wait for connections none of them gives back. A refused pooler stops startup.
 */
final class ExecutorWarmUp {
    private static final Logger log = LoggerFactory.getLogger(ExecutorWarmUp.class);

    private ExecutorWarmUp() {
    }

    static void run(PostgresIdempotentExecutor executor) {
        try {
            executor.checkConnectionPooler();
            log.debug("idempotent executor checked its pool at startup");
        } catch (PoolerBreaksPreparedStatementsException refused) {
            throw refused;
        } catch (RuntimeException e) {
            // The database may be starting too: the check then runs at the first call, as without the starter.
            log.warn("idempotent executor could not check its pool at startup; it checks at its first call: {}",
                    e.getMessage());
        }
    }
}

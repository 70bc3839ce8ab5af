package dev.idempotency.jdbc;

import java.time.Duration;
import java.util.Map;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.transaction.TransactionIsolationLevel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outbox retention without deleting rows (V4): writers insert into one of three generation tables;
 * once the current one is half a retention old, the next is truncated, if the relays consumed
 * every event in it, and becomes the current one. A generation is thus truncated two rotations
 * after writers left it, at least a retention later. Steps and locks: {@link ExecutorSql}.
 */
final class GenerationRotation {
    private static final Logger log = LoggerFactory.getLogger(GenerationRotation.class);

    /**
     * How long the rotation waits for a lock. Short, because relays' reads of the outbox queue
     * behind a waiting ACCESS EXCLUSIVE request; a rotation that times out tries again next sweep.
     */
    static final Duration LOCK_TIMEOUT = Duration.ofSeconds(1);
    /** SQLSTATE lock_not_available: the lock_timeout ran out. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";

    private final Jdbi jdbi;
    private final ExecutorSql.SweeperStatements sql;
    private final double halfRetentionSeconds;

    GenerationRotation(Jdbi jdbi, ExecutorSql.SweeperStatements sql, Duration retention) {
        this.jdbi = jdbi;
        this.sql = sql;
        this.halfRetentionSeconds = retention.toMillis() / 2000.0;
    }

    /** Rotates if due and possible; returns how many events the truncated generation held (0 if none was). */
    long rotateIfDue() {
        try {
            // READ COMMITTED whatever the pool's default: the check under the lock needs a snapshot taken after it.
            return jdbi.inTransaction(TransactionIsolationLevel.READ_COMMITTED, this::rotate);
        } catch (RuntimeException e) {
            if (LOCK_NOT_AVAILABLE.equals(DatabaseErrors.sqlState(e))) {
                log.warn("outbox retention: could not lock the next generation table within {} (a transaction is still "
                        + "writing to it, or reading the whole outbox); trying again at the next sweep", LOCK_TIMEOUT);
                return 0;
            }
            throw e;
        }
    }

    private long rotate(Handle h) {
        h.createQuery(sql.rotationLockTimeout).bind("lockTimeout", LOCK_TIMEOUT.toMillis() + "ms").mapTo(String.class).one();
        Integer current = h.createQuery(sql.dueGeneration).bind("halfRetentionSeconds", halfRetentionSeconds)
                .mapTo(Integer.class).findOne().orElse(null);
        if (current == null) {
            return 0; // not due yet, or another sweeper is rotating
        }
        int next = (current + 1) % ExecutorSql.GENERATIONS;
        Map<String, Object> seen = h.createQuery(sql.countGeneration[next]).mapToMap().one();
        long unconsumed = ((Number) seen.get("unconsumed")).longValue();
        if (unconsumed > 0) {
            return refuse(h, next, unconsumed);
        }
        h.execute(sql.lockGeneration[next]);
        Map<String, Object> since = h.createQuery(sql.countGenerationSince[next])
                .bind("snapshot", (String) seen.get("snapshot")).mapToMap().one();
        unconsumed = ((Number) since.get("unconsumed")).longValue();
        if (unconsumed > 0) {
            return refuse(h, next, unconsumed);
        }
        h.execute(sql.truncateGeneration[next]);
        h.createUpdate(sql.switchGeneration).bind("generation", (short) next).execute();
        long removed = ((Number) seen.get("events")).longValue() + ((Number) since.get("events")).longValue();
        log.debug("outbox retention: truncated outbox_events_{} ({} events); writers now use it", next, removed);
        return removed;
    }

    private static long refuse(Handle h, int generation, long unconsumed) {
        h.rollback();
        log.warn("outbox retention: {} events in outbox_events_{} are not consumed yet (relays behind or stopped, "
                + "or none ran on this schema); writers stay on the current generation and nothing is removed until "
                + "the relays catch up", unconsumed, generation);
        return 0;
    }
}

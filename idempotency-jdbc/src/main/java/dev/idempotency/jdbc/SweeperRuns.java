package dev.idempotency.jdbc;

import dev.idempotency.jdbc.internal.RedactedErrors;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records each sweep in sweeper_runs (V10) for the console of any process, with one statement at the
 * sweep's end that also keeps the V10 tables bounded ({@link ExecutorSql}'s RECORD_SWEEP). A failed write
 * is logged and dropped. On a schema before V10 it records nothing from the first sweep on, and says so
 * once at INFO.
 */
final class SweeperRuns {
    private static final Logger log = LoggerFactory.getLogger(SweeperRuns.class);
    /** sweeper_runs.error is an operator's hint, not a log: a long message is cut here. */
    private static final int MAX_ERROR_LENGTH = 2000;

    private final Jdbi jdbi;
    private final String statement;
    private final String schema;
    /** Which process swept: the JVM's {@code pid@host}, as JDK tools name it. */
    private final String sweeper = ManagementFactory.getRuntimeMXBean().getName();
    private volatile boolean recording = true;

    SweeperRuns(Jdbi jdbi, ExecutorSql.SweeperStatements sql, String schema) {
        this.jdbi = jdbi;
        this.statement = sql.recordSweep;
        this.schema = schema;
    }

    /** Records a sweep that took {@code took} and changed what the counts say; {@code failure} when it failed. */
    void record(Duration took, long leasesFailed, long keysPurged, long eventsPurged, RuntimeException failure) {
        if (!recording) {
            return;
        }
        String error = failure == null ? null : cut(failure.getClass().getSimpleName() + ": " + RedactedErrors.describe(failure));
        try {
            jdbi.withHandle(h -> h.createQuery(statement).bind("sweeper", sweeper).bind("durationMillis", took.toMillis())
                    .bind("leasesFailed", leasesFailed).bind("keysPurged", keysPurged).bind("eventsPurged", eventsPurged)
                    .bind("error", error).mapTo(Long.class).one());
        } catch (RuntimeException e) {
            if (DatabaseErrors.undefinedTable(e)) {
                recording = false;
                log.info("schema '{}' predates migration V10, so the sweeper records its runs in no table (it sweeps as"
                        + " before); apply the library's migrations and restart it to record them", schema);
            } else if (failure == null) {
                log.warn("could not record the sweep in sweeper_runs; it is left out: {}", RedactedErrors.describe(e));
            } else {
                log.debug("could not record the failed sweep in sweeper_runs: {}", RedactedErrors.describe(e));
            }
        }
    }

    private static String cut(String text) {
        return text.length() <= MAX_ERROR_LENGTH ? text : text.substring(0, MAX_ERROR_LENGTH - 1) + "…";
    }
}

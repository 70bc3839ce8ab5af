package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkSql;

/**
 * The SQL statements of the relay cost section (9): the outbox table's autovacuum switch, WAL
 * positions and the table's statistics counters. Templates name the schema as {@code <schema>},
 * rendered by {@link BenchmarkSql#render}.
 */
final class RelayCostSql {
    /**
     * No autovacuum on one of the outbox's tables, so that the dead tuples a drain leaves are still there
     * to count. Per table: a partitioned table takes no autovacuum setting, its generation tables do.
     */
    static final String AUTOVACUUM_OFF = "ALTER TABLE <schema>.<table> SET (autovacuum_enabled = off)";

    /** The table back to the server's autovacuum setting, for the sections after this one. */
    static final String AUTOVACUUM_RESET = "ALTER TABLE <schema>.<table> RESET (autovacuum_enabled)";

    /** The server's current WAL insert position; the whole cluster's, not one session's. */
    static final String CURRENT_WAL_LSN = "SELECT pg_current_wal_lsn()::text";

    /** Bytes of WAL between two positions. */
    static final String WAL_BYTES_BETWEEN = "SELECT pg_wal_lsn_diff(CAST(:after AS pg_lsn), CAST(:before AS pg_lsn))::bigint";

    /**
     * WAL records and full-page images the whole cluster has written since the statistics were reset;
     * backends add theirs when they send their counters, as for {@link #OUTBOX_STATS}.
     */
    static final String WAL_STATS = "SELECT wal_records, wal_fpi FROM pg_stat_wal";

    /**
     * The statistics of the named tables, summed (the V4 outbox is three generation tables plus
     * outbox_retries): dead tuples now, the cumulative insert, update and delete counters (which
     * TRUNCATE does not reset), and their size with indexes. Read outside any explicit transaction, so
     * each read is fresh (stats_fetch_consistency caches only within a transaction).
     */
    static final String TABLE_STATS = """
            SELECT coalesce(sum(s.n_dead_tup), 0), coalesce(sum(s.n_tup_upd), 0), coalesce(sum(s.n_tup_hot_upd), 0),
                   coalesce(sum(s.n_tup_ins), 0), coalesce(sum(s.n_tup_del), 0),
                   coalesce(sum(pg_total_relation_size(s.relid)), 0)
            FROM pg_stat_user_tables s
            WHERE s.schemaname = :schema AND s.relname = ANY(:tables)""";

    private RelayCostSql() {
    }
}

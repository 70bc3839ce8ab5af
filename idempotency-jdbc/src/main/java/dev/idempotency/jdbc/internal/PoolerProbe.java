package dev.idempotency.jdbc.internal;

import dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.postgresql.PGConnection;
import org.postgresql.PGStatement;
import org.postgresql.jdbc.PreferQueryMode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells at start whether a connection pooler between us and PostgreSQL breaks pgjdbc's named
 * server-side prepared statements, and recognises the errors such a pooler causes later. Internal:
 * not API.
 *
 * <p>What it checks, in order, on connections from the caller's pool:
 * <ol>
 *   <li>{@code prepareThreshold=0} (or {@code preferQueryMode=simple}) on the connection: pgjdbc
 *       names no statement, so no pooler can mix them up. Safe.</li>
 *   <li>The backend key pgjdbc got at login equals {@code pg_backend_pid()}: no pooler answers for
 *       the server (a transaction pooler cannot hand over one backend's key, since its clients have
 *       no fixed backend; PgBouncer always makes up its own). Safe.</li>
 *   <li>A statement prepared under pgjdbc's name {@code S_n} shows in {@code pg_prepared_statements}
 *       as {@code PGBOUNCER_n}: PgBouncer >= 1.21 with {@code max_prepared_statements} renames and
 *       tracks them per backend. Safe. Preparing it fails with 26000, 42P05 or a bind mismatch: the
 *       pooler is already mixing statements up. Refused.</li>
 *   <li>Another connection of the same pool, taken while the first is still held, runs on the
 *       backend the first one just used: the pooler multiplexes clients over backends (transaction
 *       or statement mode) without tracking their statements. Refused.</li>
 * </ol>
 *
 * <p>What it cannot see: a pooler that forwards the server's own backend key; a transaction pooler
 * that happened to hand the second connection another backend in all tries (busy backends, round
 * robin) or a pool that could not lend a second connection within a second (both only logged, at
 * WARN); and a pooler that is added or reconfigured after start. The errors such a pooler causes at
 * run time are still recognised by {@link #brokenByPooler}. The tests run against PgBouncer 1.18 in
 * transaction mode (refused) and session mode, and 1.24 with {@code max_prepared_statements} (tracked).
 */
public final class PoolerProbe {
    private static final Logger log = LoggerFactory.getLogger(PoolerProbe.class);

    /** SQLSTATEs a pooler that mixes up named statements causes: missing, duplicate, mismatched statement. */
    private static final Set<String> MIXED_UP_STATEMENT_STATES = Set.of("26000", "42P05", "08P01");
    private static final String PGBOUNCER_STATEMENT_PREFIX = "PGBOUNCER_";
    private static final int MULTIPLEXING_TRIES = 3;
    private static final long SECOND_CONNECTION_WAIT_MILLIS = 1000;

    /**
     * What the probe found when there was nothing to refuse: a pooler that would mix up named
     * statements is refused with {@link dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException} instead.
     */
    public enum Verdict {
        /** The connections name no statements. */
        UNNAMED,
        /** No pooler answers for the server. */
        DIRECT,
        /** A pooler that tracks named statements per backend. */
        TRACKED,
        /** A pooler that did not move this client between backends: session pooling, or it could not be told. */
        POOLER_NOT_MULTIPLEXING,
        /** The connections are not pgjdbc's; nothing can be told. */
        UNKNOWN
    }

    private PoolerProbe() {
    }

    /**
     * Probes the pool behind {@code jdbi}; {@code who} names the caller in messages (e.g. "the
     * idempotent executor"). Returns what it found; throws when named statements would be mixed up.
     *
     * @throws PoolerBreaksPreparedStatementsException when a pooler multiplexes this pool's
     *         connections over backends and does not track their named statements
     */
    public static Verdict check(Jdbi jdbi, String who) {
        try (Handle first = jdbi.open()) {
            Connection connection = first.getConnection();
            if (!connection.isWrapperFor(PGConnection.class)) {
                log.debug("{}: the pool's connections are not pgjdbc's; no pooler check", who);
                return Verdict.UNKNOWN;
            }
            PGConnection pg = connection.unwrap(PGConnection.class);
            if (pg.getPrepareThreshold() == 0 || pg.getPreferQueryMode() == PreferQueryMode.SIMPLE) {
                // Safe, but PostgreSQL then parses and plans every statement of every call (README, Behind PgBouncer).
                log.info("{}: the pool's connections name no prepared statements (prepareThreshold=0 or "
                        + "preferQueryMode=simple), so PostgreSQL parses and plans each statement every time. Behind "
                        + "PgBouncer 1.21 or later with max_prepared_statements > 0, or with no transaction pooler, a URL "
                        + "without prepareThreshold=0 is safe and saves that.", who);
                return Verdict.UNNAMED;
            }
            if (backendPid(connection) == pg.getBackendPID()) {
                return Verdict.DIRECT;
            }
            for (int i = 0; i < MULTIPLEXING_TRIES; i++) {
                NamedStatement named = prepareNamed(connection, who);
                if (named.name().startsWith(PGBOUNCER_STATEMENT_PREFIX)) {
                    return Verdict.TRACKED;
                }
                Integer other = backendPidOfAnotherConnection(jdbi);
                if (other == null) {
                    log.warn("{}: a connection pooler answers for PostgreSQL, and the pool could not lend a second "
                            + "connection to tell whether it pools by transaction. If it does, use PgBouncer >= 1.21 "
                            + "with max_prepared_statements > 0, or set prepareThreshold=0 in the JDBC URL.", who);
                    return Verdict.POOLER_NOT_MULTIPLEXING;
                }
                if (other == named.backendPid()) {
                    throw new PoolerBreaksPreparedStatementsException("A connection pooler between " + who
                            + " and PostgreSQL runs several client connections on one server connection (PgBouncer in "
                            + "transaction or statement mode) and does not track their named prepared statements "
                            + "(it passed pgjdbc's name " + named.name() + " through to the server), so a statement "
                            + "of one client can run another client's SQL: a call could report an outcome that was "
                            + "never committed. Refusing to use it.");
                }
            }
            log.info("{}: a connection pooler answers for PostgreSQL; it kept each client connection on its own server "
                    + "connection in {} tries, so it looks like session pooling. If it pools by transaction, use "
                    + "PgBouncer >= 1.21 with max_prepared_statements > 0, or set prepareThreshold=0 in the JDBC URL.",
                    who, MULTIPLEXING_TRIES);
            return Verdict.POOLER_NOT_MULTIPLEXING;
        } catch (SQLException e) {
            if (brokenByPooler(e)) {
                throw new PoolerBreaksPreparedStatementsException("A connection pooler between " + who
                        + " and PostgreSQL mixed up named prepared statements while it was being checked (SQLSTATE "
                        + e.getSQLState() + "). Refusing to use it.", e);
            }
            throw new IllegalStateException(who + " could not check the connection pooler in front of PostgreSQL: "
                    + e.getMessage(), e);
        }
    }

    /**
     * True when {@code e} (or the first SQLException among its causes) is an error that a pooler
     * mixing up pgjdbc's named statements ({@code S_n}) causes: the statement does not exist (26000),
     * already exists (42P05), or takes other parameters (08P01, bind mismatch).
     */
    public static boolean brokenByPooler(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                String message = sql.getMessage();
                return MIXED_UP_STATEMENT_STATES.contains(sql.getSQLState())
                        && message != null && message.contains("\"S_");
            }
        }
        return false;
    }

    private record NamedStatement(String name, int backendPid) {
    }

    /**
     * Prepares a statement under a pgjdbc name in one transaction, and reads in the same transaction
     * (so on the same backend) the name the server knows it by; a name of pgjdbc's own is then
     * deallocated there, so the probe leaves nothing on a backend that other clients share.
     */
    private static NamedStatement prepareNamed(Connection connection, String who) throws SQLException {
        // The marker is ours (no input), so it can be part of the text that pg_prepared_statements shows.
        String marker = "idempotency-pooler-probe-" + UUID.randomUUID();
        boolean autoCommit = connection.getAutoCommit();
        connection.setAutoCommit(false);
        try {
            int pid;
            try (PreparedStatement probe = connection.prepareStatement("SELECT pg_backend_pid(), '" + marker + "'")) {
                probe.unwrap(PGStatement.class).setPrepareThreshold(1);
                try (ResultSet rows = probe.executeQuery()) {
                    rows.next();
                    pid = rows.getInt(1);
                }
            }
            String name = "";
            try (PreparedStatement find = connection.prepareStatement(
                    "SELECT name FROM pg_prepared_statements WHERE strpos(statement, ?) > 0")) {
                find.setString(1, marker);
                try (ResultSet rows = find.executeQuery()) {
                    if (rows.next()) {
                        name = rows.getString(1);
                    }
                }
            }
            if (!name.isEmpty() && !name.startsWith(PGBOUNCER_STATEMENT_PREFIX)) {
                try (Statement deallocate = connection.createStatement()) {
                    deallocate.execute("DEALLOCATE \"" + name.replace("\"", "\"\"") + "\"");
                }
            }
            connection.commit();
            log.debug("{}: probe statement is {} on backend {}", who, name, pid);
            return new NamedStatement(name, pid);
        } catch (SQLException e) {
            connection.rollback();
            throw e;
        } finally {
            connection.setAutoCommit(autoCommit);
        }
    }

    /** The backend another connection of the pool runs on now, or null if the pool lends none within a second. */
    private static Integer backendPidOfAnotherConnection(Jdbi jdbi) throws SQLException {
        CompletableFuture<Handle> second = CompletableFuture.supplyAsync(jdbi::open, task -> {
            Thread thread = new Thread(task, "idempotency-pooler-probe");
            thread.setDaemon(true);
            thread.start();
        });
        Handle handle;
        try {
            handle = second.get(SECOND_CONNECTION_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            second.thenAccept(Handle::close);
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            second.thenAccept(Handle::close);
            return null;
        } catch (ExecutionException e) {
            if (e.getCause() != null && e.getCause().getCause() instanceof SQLException sql) {
                throw sql;
            }
            return null;
        }
        try (handle) {
            return backendPid(handle.getConnection());
        }
    }

    private static int backendPid(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery("SELECT pg_backend_pid()")) {
            rows.next();
            return rows.getInt(1);
        }
    }
}

package dev.idempotency.outbox;

import java.sql.SQLException;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides whether the positions stored in {@code outbox_relay_partitions} hold on the server the relay
 * is connected to, makes them hold when they do not, and returns the token of the server's current run,
 * by which every later read and write of positions is gated ({@code RelaySql.ON_THIS_SERVER}).
 *
 * <p>Positions count transaction ids, and those belong to one server's history. After a failover to a
 * standby that lagged, a point-in-time restore or a crash, the stored positions still hold (each is
 * durable only with every transaction it saw) but the ones a relay holds in memory may not, so the
 * caller forgets those and reads the stored ones again. A dump restored on another server or a
 * logical-replication cut-over brings positions, and events' txids, from another server's count: then
 * every event still in the outbox is made pending again, which publishes each at least once more, in
 * key order; consumers drop the copies by message id. A copy whose id sequence is behind its rows
 * cannot be made safe here: the relay refuses it with the command that fixes it.
 */
final class ServerHistory {
    private static final Logger log = LoggerFactory.getLogger(ServerHistory.class);
    /** How long a rebase waits for writers in flight before it gives up and is tried again. */
    private static final String REBASE_LOCK_TIMEOUT = "5s";

    private final Jdbi jdbi;
    private final String instanceId;
    private final String schema;
    private final RelaySql sql;

    ServerHistory(Jdbi jdbi, String instanceId, String schema, RelaySql sql) {
        this.jdbi = jdbi;
        this.instanceId = instanceId;
        this.schema = schema;
        this.sql = sql;
    }

    /** Whether {@code failure} is a statement's refusal to use positions from before the server changed. */
    static boolean serverChanged(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLException e && RelaySql.SERVER_CHANGED.equals(e.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Checks the stored positions against this server under the start-up lock, rebases them if they do
     * not hold here, and returns this run's token (drawing it if there is none yet).
     *
     * @throws OutboxSchemaException when the outbox holds ids above its sequence's last value; the message
     *         names the {@code setval} that fixes it
     */
    UUID validate() {
        return jdbi.inTransaction(h -> {
            h.createUpdate(sql.lockPartitions).execute();
            h.createUpdate(sql.drawServerToken).execute();
            Check check = h.createQuery(sql.serverCheck).map((rs, ctx) -> new Check(
                    rs.getObject("token", UUID.class), rs.getLong("system_identifier"), rs.getString("xmax"),
                    rs.getLong("foreign_positions"), rs.getObject("foreign_system_identifier", Long.class),
                    rs.getLong("positions_ahead"), rs.getLong("events_ahead"), rs.getObject("max_id", Long.class),
                    rs.getObject("sequence_last", Long.class), rs.getString("sequence"))).one();
            if (check.maxId() != null && (check.sequenceLast() == null || check.maxId() > check.sequenceLast())) {
                throw new OutboxSchemaException("outbox relay " + instanceId + " stopped: \"" + schema
                        + "\".outbox_events holds id " + check.maxId() + ", above the last id its sequence "
                        + check.sequence() + " handed out (" + (check.sequenceLast() == null ? "none" : check.sequenceLast())
                        + "; a logical replica copies"
                        + " rows but not sequences), so new events would get lower ids than older events of their"
                        + " keys; fix: SELECT setval('" + check.sequence() + "', " + check.maxId() + ")");
            }
            if (check.foreignPositions() > 0 || check.positionsAhead() > 0 || check.eventsAhead() > 0) {
                h.createQuery(RelaySql.REBASE_LOCK_TIMEOUT).bind("lockTimeout", REBASE_LOCK_TIMEOUT).mapTo(String.class).one();
                h.createUpdate(sql.rebaseLock).execute();
                long[] rebased = h.createQuery(sql.rebase).map((rs, ctx) -> new long[] {
                        rs.getLong("events"), rs.getLong("restamped"), rs.getLong("partitions")}).one();
                log.warn("relay {}: the outbox's positions do not hold on this PostgreSQL server ({}): every one of the"
                                + " {} events still in the outbox is published again from the start ({} re-stamped with"
                                + " this server's transaction id, {} partitions reset); consumers drop the copies by"
                                + " message id", instanceId, check.why(), rebased[0], rebased[1], rebased[2]);
            }
            return check.token();
        });
    }

    private record Check(UUID token, long systemIdentifier, String xmax, long foreignPositions,
                         Long foreignSystemIdentifier, long positionsAhead, long eventsAhead, Long maxId,
                         Long sequenceLast, String sequence) {
        String why() {
            StringBuilder why = new StringBuilder();
            if (foreignPositions > 0) {
                why.append(foreignPositions).append(" partitions were written on the server with system identifier ")
                        .append(foreignSystemIdentifier).append(", this one is ").append(systemIdentifier)
                        .append(": a dump restored here, or a logical-replication cut-over");
            }
            if (positionsAhead > 0) {
                why.append(why.isEmpty() ? "" : "; ").append(positionsAhead)
                        .append(" partitions are ahead of this server's transaction counter (").append(xmax).append(")");
            }
            if (eventsAhead > 0) {
                why.append(why.isEmpty() ? "" : "; ").append(eventsAhead)
                        .append(" events carry transaction ids at or above this server's counter (").append(xmax)
                        .append("): copied from another server");
            }
            return why.toString();
        }
    }
}

package dev.idempotency.outbox;

import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The publish path: reads pages of committed events by snapshot difference, and after each page moves
 * the positions of its partitions, written with one fenced statement that also copies the page's failed
 * and held-back events to {@code outbox_retries}; while the relay keeps up, at most once per
 * positionWriteInterval. Nothing per event is updated or deleted.
 *
 * <p>Each virtual partition's position is (consumed snapshot lo; while a batch is under way, its
 * snapshot hi and a cursor). A batch is the events visible in hi and not in lo, read in id order:
 * every writer of one ordering key draws its id under an advisory lock held to commit (migration V8's
 * trigger takes it for any INSERT, the executor's among them), so per key id order is commit order,
 * and a snapshot that shows a key's later event shows its earlier ones. So no page
 * skips an event nor reorders a key, within a batch and across batches; an event of a transaction
 * still in progress at hi is in a later batch. Partitions whose batch is under way at the same hi and
 * cursor are read together (such groups in turn), as are all partitions that start a new batch (they
 * then share its hi). A page is cut where a key reaches maxEventsPerKey, for that key's partition only.
 *
 * <p>The reads and writes of pages run on plain JDBC ({@link JdbcStatement}), up to a hundred times a second
 * beside writers: Jdbi's statement machinery was a quarter of a relay worker's CPU there.
 *
 * <p>Used by the worker thread only. Positions are cached per lease epoch; a new lease reads the
 * stored position, so a new owner goes on where the last fenced write of the old one left it (and
 * publishes again what the old one published after it).
 *
 * <p>Positions count transaction ids of one server's history, so every read and write is gated by the
 * token of the server's run that {@link ServerHistory} validated the stored positions under. When the
 * server changed (a restart, crash recovery, failover or restore), the gate refuses the statement: the
 * positions held in memory are forgotten, since they may be ahead of the server's history, and the
 * stored ones are validated and read again.
 */
final class OutboxPositions {
    private static final Logger log = LoggerFactory.getLogger(OutboxPositions.class);

    /** A partition's position as stored; {@code batch} and {@code cursor} are both null or both set. */
    record Position(long epoch, String consumed, String batch, Long cursor) {
    }

    /**
     * One page: the events of the partitions {@code positions} read under snapshot {@code hi}, in id
     * order. {@code full}: the batch goes on after {@code coveredTo} (every event of those partitions
     * in the batch with an id up to it is in the page); otherwise the page ends the batch. {@code cuts}:
     * partitions whose events were cut off (a key reached maxEventsPerKey) at that id, and after it.
     * {@code continuation}: the partitions had a batch under way.
     */
    record Page(String hi, Map<Integer, Position> positions, List<ClaimedEvent> events, boolean full, long coveredTo,
                Map<Integer, Long> cuts, boolean continuation) {
        static final Page NONE = new Page(null, Map.of(), List.of(), false, 0, Map.of(), false);
    }

    private static final String AUTOCOMMIT_OFF = "its DataSource hands out connections with autocommit off, and each of"
            + " the relay's statements must be a transaction of its own; give the relay a pool in autocommit (HikariCP's"
            + " default, autoCommit=true)";

    private final Jdbi jdbi;
    private final DataSource dataSource;
    /** Jdbi's query timeout for every other statement of the relay ({@link OutboxRelay#jdbi}): none outlives a lease. */
    private final int queryTimeoutSeconds;
    private final ServerHistory history;
    private final String instanceId;
    private final int partitions;
    private final int batchSize;
    private final int maxEventsPerKey;
    private final String positionsSql;
    private final JdbcStatement diffStart;
    private final JdbcStatement diffStartByIndex;
    private final JdbcStatement diffPageByIndex;
    private final JdbcStatement settlePage;
    private final JdbcStatement settlePageWithRetries;
    private final long writeIntervalNanos;
    private final Map<Integer, Position> known = new HashMap<>();
    /** Positions moved in memory (and in {@link #known}) and not yet written, in partition order. */
    private final Map<Integer, Position> unwritten = new TreeMap<>();
    private long lastWriteNanos = System.nanoTime();
    /** The last read filled a page (and so does the first, until a read says otherwise). */
    private boolean backlog = true;
    private int turn;
    /** The token of the server run the positions are validated on; null until validated, or after a change. */
    private UUID server;

    OutboxPositions(DataSource dataSource, Jdbi jdbi, OutboxRelayConfig config, RelaySql sql) {
        this.jdbi = jdbi;
        this.dataSource = dataSource;
        this.queryTimeoutSeconds = OutboxRelay.queryTimeoutSeconds(config);
        this.history = new ServerHistory(jdbi, config.instanceId(), config.schema(), sql);
        this.instanceId = config.instanceId();
        this.partitions = config.partitions();
        this.batchSize = config.batchSize();
        this.maxEventsPerKey = config.maxEventsPerKey();
        this.writeIntervalNanos = config.positionWriteInterval().toNanos();
        this.positionsSql = sql.positions;
        this.diffStart = JdbcStatement.of(sql.diffStart);
        this.diffStartByIndex = JdbcStatement.of(sql.diffStartByIndex);
        this.diffPageByIndex = JdbcStatement.of(sql.diffPageByIndex);
        this.settlePage = JdbcStatement.of(sql.settlePage);
        this.settlePageWithRetries = JdbcStatement.of(sql.settlePageWithRetries);
    }

    /**
     * The next page for these partitions (partition to lease epoch): of a batch under way if any
     * partition has one (with the partitions at the same snapshot and cursor; such groups in turn),
     * else the first page of a new batch of all of them.
     */
    Page read(Map<Integer, Long> leases) {
        if (leases.isEmpty()) {
            return Page.NONE;
        }
        if (server == null) {
            validateServer();
        }
        try {
            return readOnThisServer(leases);
        } catch (RuntimeException e) {
            if (!ServerHistory.serverChanged(e)) {
                throw e;
            }
            forgetOnServerChange();
            validateServer();
            return readOnThisServer(leases);
        }
    }

    /**
     * After a statement's gate refused it: says so once, and forgets the server's token and every position
     * held in memory, so that nothing is read or written before {@link #validateServer()} ran again.
     */
    private void forgetOnServerChange() {
        log.warn("relay {}: the PostgreSQL server changed under it (a restart, crash recovery, failover or restore):"
                + " it forgets the positions it held and goes on from those stored in the database, publishing"
                + " again what it published since they were written", instanceId);
        server = null;
        known.clear();
        unwritten.clear();
    }

    /**
     * Validates the stored positions on the server connected to now ({@link ServerHistory#validate()}) and
     * forgets every position held in memory, so the next reads start from the stored ones.
     */
    void validateServer() {
        server = null;
        known.clear();
        unwritten.clear();
        backlog = true;
        server = history.validate();
    }

    private Page readOnThisServer(Map<Integer, Long> leases) {
        refresh(leases);
        Map<String, Map<Integer, Position>> underWay = new TreeMap<>();
        for (Map.Entry<Integer, Long> lease : leases.entrySet()) {
            Position position = known.get(lease.getKey());
            if (position.batch() != null) {
                underWay.computeIfAbsent(position.batch() + "/" + position.cursor(), g -> new TreeMap<>())
                        .put(lease.getKey(), position);
            }
        }
        if (underWay.isEmpty()) {
            return startBatch(leases);
        }
        // In turn, so that a partition held back by a long run of one key does not hold back the others.
        return nextPage(List.copyOf(underWay.values()).get(Math.floorMod(turn++, underWay.size())), leases);
    }

    /**
     * The read of the page after {@code page}, planned as if every event of {@code page} settles: from the
     * positions {@code page} would then leave ({@link #after}), for the same partitions and epochs ({@code
     * leases}, those {@code page} was read under). Its rows are fetched by {@link #fetch} (on any thread:
     * it touches nothing of this object's state) while {@code page} is published; {@link #take} makes them
     * a page only if the settled positions are what the plan assumed. Null when there is nothing to plan:
     * every partition would start a new batch (a relay that keeps up reads those at its own pace, after its
     * linger), a position is not in memory, or the server is not validated.
     */
    ReadAhead planAfter(Page page, Map<Integer, Long> leases) {
        if (server == null || page.positions().isEmpty() || leases.isEmpty()) {
            return null;
        }
        Map<Integer, Position> assumed = new TreeMap<>();
        for (Map.Entry<Integer, Long> lease : leases.entrySet()) {
            Position position = page.positions().containsKey(lease.getKey())
                    ? after(page, lease.getKey(), page.positions().get(lease.getKey()), null) : known.get(lease.getKey());
            if (position == null || position.epoch() != lease.getValue()) {
                return null;
            }
            assumed.put(lease.getKey(), position);
        }
        Map<String, Map<Integer, Position>> underWay = new TreeMap<>();
        assumed.forEach((p, position) -> {
            if (position.batch() != null) {
                underWay.computeIfAbsent(position.batch() + "/" + position.cursor(), g -> new TreeMap<>()).put(p, position);
            }
        });
        if (underWay.isEmpty()) {
            return null;
        }
        Map<Integer, Position> group = List.copyOf(underWay.values()).get(Math.floorMod(turn++, underWay.size()));
        return new ReadAhead(Map.copyOf(leases), Map.copyOf(assumed), Map.copyOf(group), server);
    }

    /** A planned read of the next page: under {@code leases}, from {@code assumed} positions, of {@code group}. */
    record ReadAhead(Map<Integer, Long> leases, Map<Integer, Position> assumed, Map<Integer, Position> group, UUID server) {
    }

    /** The rows a {@link ReadAhead} reads, and when; what {@link #fetch} returns. */
    record Fetched(List<EventRow> rows, long readAtNanos) {
    }

    /**
     * Runs a planned read: the same statement as {@link #nextPage}, gated by the server token of the plan.
     * Thread-safe: reads only this object's final fields.
     */
    Fetched fetch(ReadAhead plan) {
        List<EventRow> rows = run(diffPageByIndex, Sending.BY_INDEX, pageQuery(plan.group(), plan.server()), EventRow::read);
        return new Fetched(rows, System.nanoTime());
    }

    /**
     * The page a planned read found, if the positions in memory are now exactly those the plan assumed for
     * every partition of the same leases ({@code leases}, as publishable now) on the same server: the page
     * before settled all its events, no write failed, no lease changed. Else null: the read is dropped and
     * the next page is read again from the positions as they are.
     */
    Page take(ReadAhead plan, Fetched fetched, Map<Integer, Long> leases) {
        if (!plan.server().equals(server) || !plan.leases().equals(leases)) {
            return null;
        }
        for (Map.Entry<Integer, Position> assumed : plan.assumed().entrySet()) {
            if (!assumed.getValue().equals(known.get(assumed.getKey()))) {
                return null;
            }
        }
        String hi = plan.group().values().iterator().next().batch();
        return page(hi, new TreeMap<>(plan.group()), fetched.rows(), leases, true, fetched.readAtNanos());
    }

    /** The first page of a new batch of every one of these partitions; its hi is taken by the query. */
    private Page startBatch(Map<Integer, Long> leases) {
        Map<Integer, Position> group = new TreeMap<>();
        String[] los = new String[partitions];
        leases.keySet().forEach(p -> {
            group.put(p, known.get(p));
            los[p] = known.get(p).consumed();
        });
        String[] hi = new String[1];
        ConsumedSnapshots bounds = ConsumedSnapshots.of(los);
        UUID serverToken = server;
        JdbcStatement.Binding bind = call -> call
                .integer("partitions", partitions)
                .textArray("los", Arrays.asList(los))
                .text("xmax", bounds.xmax())
                .textArray("xip", bounds.xip())
                .uuid("server", serverToken)
                .integer("limit", batchSize + 1);
        JdbcStatement.RowReader<EventRow> rowsAndHi = rs -> {
            if (hi[0] == null) {
                hi[0] = rs.getString("hi");
            }
            return EventRow.read(rs);
        };
        // Behind a backlog the candidates may be most of a generation, where PostgreSQL's plan for this call's
        // values (a sequential scan) is the right one, and planning is small beside a full page.
        List<EventRow> rows = backlog ? run(diffStart, Sending.PLANNED_AT_EACH_CALL, bind, rowsAndHi)
                : run(diffStartByIndex, Sending.BY_INDEX, bind, rowsAndHi);
        // An empty difference needs no write: the consumed snapshot stays, and the next one is still exact.
        return rows.isEmpty() ? Page.NONE : page(hi[0], group, rows, leases, false, System.nanoTime());
    }

    /** The next page of a batch under way, for partitions at the same snapshot and cursor. */
    private Page nextPage(Map<Integer, Position> group, Map<Integer, Long> leases) {
        String hi = group.values().iterator().next().batch();
        List<EventRow> rows = run(diffPageByIndex, Sending.BY_INDEX, pageQuery(group, server), EventRow::read);
        return page(hi, group, rows, leases, true, System.nanoTime());
    }

    /** Binds the read of the next page of {@code group}, partitions at the same snapshot and cursor. */
    private JdbcStatement.Binding pageQuery(Map<Integer, Position> group, UUID serverToken) {
        String hi = group.values().iterator().next().batch();
        String[] los = new String[partitions];
        Long[] cursors = new Long[partitions];
        group.forEach((p, position) -> {
            los[p] = position.consumed();
            cursors[p] = position.cursor();
        });
        return call -> call
                .integer("partitions", partitions)
                .textArray("los", Arrays.asList(los))
                .bigintArray("cursors", Arrays.asList(cursors))
                .text("hi", hi)
                .uuid("server", serverToken)
                .integer("limit", batchSize + 1);
    }

    /** Fails, naming the fix, unless the relay's DataSource hands out connections in autocommit (see {@link #autocommit}). */
    void requireAutocommit() {
        try {
            autocommit(dataSource.getConnection(), "outbox relay not started: ").close();
        } catch (SQLException e) {
            throw JdbcStatement.failure(e);
        }
    }

    /**
     * {@code connection}, which must be in autocommit: each statement of the relay is its own transaction (a
     * position written in one left open would be rolled back when the pool takes the connection back). Else
     * closes it and fails with a message that starts with {@code context}.
     */
    private static Connection autocommit(Connection connection, String context) throws SQLException {
        if (!connection.getAutoCommit()) {
            connection.close();
            throw new IllegalStateException(context + AUTOCOMMIT_OFF);
        }
        return connection;
    }

    /** How a statement of the publish path is sent, and which of its results holds its rows. */
    private enum Sending {
        /** As it is, under a plan PostgreSQL may cache; its rows are its first result. */
        PLAIN,
        /**
         * After {@link RelaySql#INDEX_READS} in one statement string, so the plan PostgreSQL caches uses the
         * outbox's indexes whatever a generation's statistics say, in one round trip and no transaction of the
         * relay's own; the rows are the string's second result.
         */
        BY_INDEX,
        /**
         * Unnamed, so PostgreSQL plans it at each call for the sizes of that moment ({@link PlannedAtEachCall});
         * its rows are its first result.
         */
        PLANNED_AT_EACH_CALL
    }

    /**
     * Runs a statement of the publish path on a connection of its own (autocommit: one statement, one
     * transaction), with the relay's query timeout; returns its rows, each read by {@code reader}.
     * Thread-safe: touches only final fields.
     */
    private <R> List<R> run(JdbcStatement statement, Sending sending, JdbcStatement.Binding bind, JdbcStatement.RowReader<R> reader) {
        try (Connection connection = autocommit(dataSource.getConnection(), "outbox relay: ");
             JdbcStatement.Call call = statement.on(connection)) {
            call.timeout(queryTimeoutSeconds);
            if (sending == Sending.PLANNED_AT_EACH_CALL) {
                call.plannedAtEachCall();
            }
            bind.bind(call);
            ResultSet first = call.executeAll();
            try (ResultSet rows = sending == Sending.BY_INDEX ? call.nextRows() : first) {
                if (rows == null) {
                    throw new IllegalStateException("a read sent after " + RelaySql.INDEX_READS + " returned no rows of its own");
                }
                List<R> read = new ArrayList<>();
                while (rows.next()) {
                    read.add(reader.read(rows));
                }
                return read;
            }
        } catch (SQLException e) {
            throw JdbcStatement.failure(e);
        }
    }

    /**
     * Cuts the rows to a page: at most batchSize, and no key with more than maxEventsPerKey events; at
     * a key that would exceed it, the rest of that key's partition is left for a later page, while the
     * other partitions go on.
     */
    private Page page(String hi, Map<Integer, Position> group, List<EventRow> rows, Map<Integer, Long> leases,
                      boolean continuation, long claimedAt) {
        boolean full = rows.size() > batchSize;
        backlog = full;
        int end = Math.min(rows.size(), batchSize);
        Map<ClaimedEvent.OrderingKey, Integer> perKey = new HashMap<>();
        Map<Integer, Long> cuts = new HashMap<>();
        List<ClaimedEvent> events = new ArrayList<>(end);
        for (int i = 0; i < end; i++) {
            EventRow row = rows.get(i);
            if (cuts.containsKey(row.partition())) {
                continue;
            }
            // Held-back events are only copied to outbox_retries, never sent: they make no waves.
            int count = row.heldBack() ? 0 : perKey.merge(
                    new ClaimedEvent.OrderingKey(row.tenant(), row.topic(), row.partitionKey()), 1, Integer::sum);
            if (count > maxEventsPerKey) {
                cuts.put(row.partition(), row.id());
                continue;
            }
            events.add(row.decode(leases.get(row.partition()), claimedAt));
        }
        long coveredTo = full ? rows.get(end - 1).id() : Long.MAX_VALUE;
        return new Page(hi, group, events, full, coveredTo, cuts, continuation);
    }

    /**
     * Moves the page's partitions past what {@code outcomes} settled and records that: a partition's
     * cursor stops before its first unsettled event; a partition whose batch was read to the end with
     * everything settled gets hi as its consumed snapshot. The positions are written with one fenced
     * statement that also copies the page's failed, dead and held-back events to outbox_retries, at once
     * unless the page ended its batch with every event published: such positions of a relay keeping up
     * wait until {@code positionWriteInterval} has passed since the last write, or until {@link #flush()}.
     * Returns the partitions (to epoch) whose lease failed the fence.
     */
    Map<Integer, Long> settle(Page page, Settlement outcomes) {
        if (page.positions().isEmpty()) {
            return Map.of();
        }
        Set<Long> settled = outcomes.settledIds();
        Map<Integer, Long> firstUnsettled = new HashMap<>();
        Set<Integer> anySettled = new HashSet<>();
        for (ClaimedEvent event : page.events()) {
            if (settled.contains(event.id())) {
                anySettled.add(event.partition());
            } else {
                firstUnsettled.putIfAbsent(event.partition(), event.id());
            }
        }
        Map<Integer, Position> next = new TreeMap<>();
        page.positions().forEach((p, position) -> {
            Position after = after(page, p, position, firstUnsettled.get(p));
            boolean readButNoneSettled = firstUnsettled.containsKey(p) && !anySettled.contains(p);
            if (readButNoneSettled && after.cursor() != null
                    && (position.cursor() == null || position.cursor().equals(after.cursor()))) {
                return; // nothing of this partition went out: its position stays
            }
            next.put(p, after);
        });
        Moved moved = Moved.of(outcomes);
        if (next.isEmpty() && moved.ids.isEmpty()) {
            return Map.of();
        }
        known.putAll(next);
        unwritten.putAll(next);
        // Caught up with every event out: losing this position in a crash costs a republication of
        // what the relay published since its last write, never an event.
        boolean caughtUp = !page.full() && page.cuts().isEmpty() && firstUnsettled.isEmpty() && moved.ids.isEmpty();
        if (caughtUp && System.nanoTime() - lastWriteNanos < writeIntervalNanos) {
            return Map.of();
        }
        return write(moved);
    }

    /**
     * Where {@code page} leaves partition {@code p} (read from {@code position}): its cursor stops before
     * {@code firstUnsettled} (null: every event of it in the page settled) or the page's cut, else at the
     * page's end; with none of them, its batch was read to the end and hi becomes its consumed snapshot.
     */
    private static Position after(Page page, int p, Position position, Long firstUnsettled) {
        long cursor = Long.MAX_VALUE;
        if (firstUnsettled != null) {
            cursor = firstUnsettled - 1;
        }
        if (page.cuts().containsKey(p)) {
            cursor = Math.min(cursor, page.cuts().get(p) - 1);
        }
        if (page.full()) {
            cursor = Math.min(cursor, page.coveredTo());
        }
        return cursor == Long.MAX_VALUE ? new Position(position.epoch(), page.hi(), null, null)
                : new Position(position.epoch(), position.consumed(), page.hi(), cursor);
    }

    /** Writes the positions not written yet (a pause in the stream, a release, a stop); returns those fenced out. */
    Map<Integer, Long> flush() {
        return unwritten.isEmpty() ? Map.of() : write(Moved.NONE);
    }

    /**
     * Writes every unwritten position, with {@code moved}'s copies to outbox_retries, in one fenced
     * statement. If it fails, the relay forgets those positions and reads on from the stored ones
     * (publishing again what it published since), so no copy to outbox_retries is ever skipped; if it
     * failed because the server changed, the next read validates the new one first.
     */
    private Map<Integer, Long> write(Moved moved) {
        Map<Integer, Long> claimed = new LinkedHashMap<>();
        List<String> consumed = new ArrayList<>();
        List<String> batches = new ArrayList<>();
        List<Long> cursors = new ArrayList<>();
        unwritten.forEach((p, position) -> {
            claimed.put(p, position.epoch());
            consumed.add(position.consumed());
            batches.add(position.batch());
            cursors.add(position.cursor());
        });
        List<Integer> held;
        try {
            // Two statements, so that the common one (nothing failed) keeps a cached plan of its own.
            held = run(moved.ids.isEmpty() ? settlePage : settlePageWithRetries, Sending.PLAIN, call -> {
                call.text("instance", instanceId)
                        .integerArray("partitionNos", List.copyOf(claimed.keySet()))
                        .bigintArray("epochs", List.copyOf(claimed.values()))
                        .textArray("consumed", consumed)
                        .textArray("batches", batches)
                        .bigintArray("cursors", cursors)
                        .uuid("server", server);
                if (!moved.ids.isEmpty()) {
                    call.integer("partitions", partitions)
                            .bigintArray("movedIds", moved.ids)
                            .textArray("movedStatuses", moved.statuses)
                            .integerArray("movedAttempts", moved.attempts)
                            .bigintArray("movedDelays", moved.delays)
                            .textArray("movedErrors", moved.errors);
                }
            }, rows -> rows.getInt(1));
        } catch (RuntimeException e) {
            known.keySet().removeAll(unwritten.keySet());
            unwritten.clear();
            if (ServerHistory.serverChanged(e)) {
                // Nothing was written: the next read validates the server and reads the stored positions.
                forgetOnServerChange();
                return Map.of();
            }
            throw e;
        }
        lastWriteNanos = System.nanoTime();
        unwritten.clear();
        Map<Integer, Long> lost = RetryQueue.fenced(claimed, held);
        lost.forEach((p, epoch) -> {
            Position position = known.get(p);
            if (position != null && position.epoch() == epoch) {
                known.remove(p);
            }
        });
        return lost;
    }

    /**
     * Loads the stored positions of partitions not known under their current lease epoch; one moved
     * and not yet written under that epoch is taken as it is. Unwritten positions of an earlier epoch
     * are dropped: their fence would fail.
     */
    private void refresh(Map<Integer, Long> leases) {
        known.entrySet().removeIf(e -> !Long.valueOf(e.getValue().epoch()).equals(leases.get(e.getKey())));
        unwritten.entrySet().removeIf(e -> leases.containsKey(e.getKey()) && leases.get(e.getKey()) != e.getValue().epoch());
        unwritten.forEach((p, position) -> {
            if (Long.valueOf(position.epoch()).equals(leases.get(p))) {
                known.putIfAbsent(p, position);
            }
        });
        List<Integer> missing = new ArrayList<>();
        for (Integer p : leases.keySet()) {
            if (!known.containsKey(p)) {
                missing.add(p);
            }
        }
        if (missing.isEmpty()) {
            return; // as at almost every read: a loop, not a stream, for what runs up to a hundred times a second
        }
        missing.sort(null);
        jdbi.useHandle(h -> h.createQuery(positionsSql)
                .bindByType("partitionNos", missing, BoundArrays.INTEGERS)
                .map((rs, ctx) -> {
                    int p = rs.getInt("partition_no");
                    long cursor = rs.getLong("batch_cursor");
                    known.put(p, new Position(leases.get(p), rs.getString("consumed"), rs.getString("batch"),
                            rs.wasNull() ? null : cursor));
                    return p;
                })
                .list());
    }

    /** The page's events that go to outbox_retries, in id order, as the arrays of the settle statement. */
    private static final class Moved {
        static final Moved NONE = new Moved();

        final List<Long> ids = new ArrayList<>();
        final List<String> statuses = new ArrayList<>();
        final List<Integer> attempts = new ArrayList<>();
        final List<Long> delays = new ArrayList<>();
        final List<String> errors = new ArrayList<>();

        static Moved of(Settlement outcomes) {
            record Row(long id, String status, int attempts, long delay, String error) {
            }
            List<Row> rows = new ArrayList<>();
            outcomes.failed.forEach(f -> rows.add(new Row(f.event().id(), "pending", f.attempts(), f.delayMillis(),
                    RetryQueue.storable(f.error()))));
            outcomes.dead.forEach(d -> rows.add(new Row(d.event().id(), "dead", d.attempts(), 0,
                    RetryQueue.storable(d.error()))));
            outcomes.diverted.forEach(e -> rows.add(new Row(e.id(), "pending", 0, 0, null)));
            rows.sort(Comparator.comparingLong(Row::id));
            Moved moved = new Moved();
            for (Row row : rows) {
                moved.ids.add(row.id());
                moved.statuses.add(row.status());
                moved.attempts.add(row.attempts());
                moved.delays.add(row.delay());
                moved.errors.add(row.error());
            }
            return moved;
        }
    }
}

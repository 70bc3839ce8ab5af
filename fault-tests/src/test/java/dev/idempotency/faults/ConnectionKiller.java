package dev.idempotency.faults;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Kills, with {@code pg_terminate_backend}, a random connection of one role that is inside a
 * transaction or running a statement (a callback at work), every so often, on a thread of its own.
 */
final class ConnectionKiller implements AutoCloseable {
    private final FaultDatabase database;
    private final String applicationName;
    private final Ledger ledger;
    private final long minPauseMillis;
    private final long maxPauseMillis;
    private final Thread thread;
    private volatile boolean running = true;

    ConnectionKiller(FaultDatabase database, String role, Ledger ledger, long minPauseMillis, long maxPauseMillis) {
        this.database = database;
        this.applicationName = database.applicationName(role);
        this.ledger = ledger;
        this.minPauseMillis = minPauseMillis;
        this.maxPauseMillis = maxPauseMillis;
        this.thread = new Thread(this::loop, "connection-killer-" + role);
        this.thread.setDaemon(true);
    }

    ConnectionKiller start() {
        thread.start();
        return this;
    }

    /** Kills one busy connection of the role now; returns whether there was one. */
    boolean killOne() {
        try (Connection admin = database.connect()) {
            List<Integer> busy = new ArrayList<>();
            try (PreparedStatement find = admin.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ? "
                    + "AND state IN ('active', 'idle in transaction')")) {
                find.setString(1, applicationName);
                try (ResultSet rs = find.executeQuery()) {
                    while (rs.next()) {
                        busy.add(rs.getInt(1));
                    }
                }
            }
            if (busy.isEmpty()) {
                return false;
            }
            try (PreparedStatement kill = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
                kill.setInt(1, busy.get(ThreadLocalRandom.current().nextInt(busy.size())));
                kill.execute();
            }
            ledger.fault("connection killed");
            return true;
        } catch (SQLException e) {
            return false; // the server may be restarting under another fault
        }
    }

    private void loop() {
        while (running) {
            try {
                Thread.sleep(ThreadLocalRandom.current().nextLong(minPauseMillis, maxPauseMillis + 1));
            } catch (InterruptedException e) {
                return;
            }
            killOne();
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.interrupt();
        thread.join(10_000);
    }
}

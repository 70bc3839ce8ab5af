package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The database's history moves under two running relays and running writers: a crash that loses commits
 * not yet flushed, a failover to a standby
 * that lagged, a point-in-time restore, a dump restored on another server with a lower and with a higher
 * transaction counter, and a logical-replication cut-over. Events are pending, in flight and written
 * after each move. Each test ends on the history that won: every event in that database is published at
 * least once, and per ordering key first in id order. Events the move took away were committed on the
 * lost history only; their publications are counted apart.
 */
@Timeout(300)
class HistoryMovesTest {

    @Test
    void aFailoverToAStandbyThatLaggedPublishesEveryEventOfTheNewPrimaryInKeyOrder() throws Exception {
        try (PrivatePostgres server = PrivatePostgres.start();
             FaultDatabase db = FaultDatabase.on(server.url(), "history_failover");
             Run run = new Run(db)) {
            run.loadFor("before", Duration.ofSeconds(2));
            PrivatePostgres standby = server.standby();
            run.loadFor("streamed", Duration.ofSeconds(2));
            standby.stopServer();
            run.move("standby stopped: it lags from here");
            run.startLoad("lost and after");
            run.awaitPublications(300);
            server.crashAndPromote(standby);
            run.move("primary crashed mid-load; the standby promoted on its port");
            Thread.sleep(3_000);
            run.assertEveryEventPublishedInKeyOrder("failover to a standby that lagged");
        }
    }

    @Test
    void aCrashThatLosesUnflushedCommitsPublishesEveryEventOfTheRecoveredHistoryInKeyOrder() throws Exception {
        // Commits wait for no flush and the WAL writer flushes every 10 s: a crash loses the last seconds of
        // commits, and the recovered server hands their transaction ids out again.
        try (PrivatePostgres server = PrivatePostgres.start(List.of("synchronous_commit=off", "wal_writer_delay=10000ms"));
             FaultDatabase db = FaultDatabase.on(server.url(), "history_crash");
             Run run = new Run(db)) {
            run.startLoad("before");
            run.awaitPublications(600);
            server.crash();
            server.startServer();
            run.move("server crashed mid-load with commits not yet flushed, recovered in place");
            Thread.sleep(3_000);
            run.assertEveryEventPublishedInKeyOrder("crash that lost unflushed commits");
        }
    }

    @Test
    void aPointInTimeRestoreUnderRunningRelaysPublishesEveryEventOfTheRestoredHistoryInKeyOrder() throws Exception {
        try (PrivatePostgres server = PrivatePostgres.start();
             FaultDatabase db = FaultDatabase.on(server.url(), "history_pitr");
             Run run = new Run(db)) {
            run.startLoad("before");
            run.awaitPublications(300);
            Path backup = server.baseBackup();
            run.move("base backup taken mid-load");
            run.awaitPublications(600);
            server.crashAndStartFrom(backup);
            run.move("server crashed mid-load and restored to the backup's end");
            Thread.sleep(3_000);
            run.assertEveryEventPublishedInKeyOrder("point-in-time restore");
        }
    }

    @Test
    void aDumpRestoredOnAServerWithALowerCounterPublishesEveryPendingAndNewEventInKeyOrder() throws Exception {
        dumpRestoredOnAnotherServer(20_000, 0, "dump restored on a server with a lower counter");
    }

    @Test
    void aDumpRestoredOnAServerWithAHigherCounterPublishesEveryPendingAndNewEventInKeyOrder() throws Exception {
        dumpRestoredOnAnotherServer(0, 60_000, "dump restored on a server with a higher counter");
    }

    private static void dumpRestoredOnAnotherServer(int burnBefore, int burnOnNewServer, String title) throws Exception {
        try (PrivatePostgres server = PrivatePostgres.start()) {
            server.burnTransactionIds(burnBefore);
            try (FaultDatabase db = FaultDatabase.on(server.url(), "history_dump");
                 Run run = new Run(db)) {
                run.startLoad("before");
                run.awaitPublications(300);
                Path dump = server.dump(db.schema());
                run.move("dump taken mid-load");
                run.awaitPublications(600);
                run.stopLoad();
                server.crashAndStartFreshCluster();
                server.burnTransactionIds(burnOnNewServer);
                server.restore(dump);
                run.move("old server gone; the dump restored on a new cluster in its place");
                run.loadFor("after", Duration.ofSeconds(3));
                run.assertEveryEventPublishedInKeyOrder(title);
            }
        }
    }

    @Test
    void aLogicalReplicationCutOverPublishesEveryEventInKeyOrder() throws Exception {
        try (PrivatePostgres server = PrivatePostgres.start(List.of("wal_level=logical"))) {
            server.burnTransactionIds(20_000);
            try (FaultDatabase db = FaultDatabase.on(server.url(), "history_logical");
                 Run run = new Run(db);
                 PrivatePostgres replica = server.clusterBeside()) {
                String schema = db.schema();
                run.startLoad("before");
                run.awaitPublications(300);
                replica.restore(server.dumpDefinitions(schema));
                server.psql("CREATE PUBLICATION cutover FOR TABLES IN SCHEMA \"" + schema + "\"");
                replica.psql("CREATE SUBSCRIPTION cutover CONNECTION 'host=127.0.0.1 port=" + server.port()
                        + " user=postgres dbname=postgres' PUBLICATION cutover");
                run.move("logical replica subscribed mid-load");
                run.awaitPublications(600);
                run.stopLoad();
                String count = "SELECT count(*) FROM \"" + schema + "\".outbox_events";
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!server.psql(count).equals(replica.psql(count)) && System.nanoTime() < deadline) {
                    Thread.sleep(200);
                }
                assertEquals(server.psql(count), replica.psql(count), "the replica did not catch up");
                replica.psql("ALTER SUBSCRIPTION cutover DISABLE");
                replica.psql("ALTER SUBSCRIPTION cutover SET (slot_name = NONE)");
                replica.psql("DROP SUBSCRIPTION cutover");
                replica.stopServer();
                server.crashAndStartFrom(replica.dataDirectory());
                // The cut-over's documented step: a logical replica copies rows but not sequences.
                server.psql("SELECT setval('\"" + schema + "\".outbox_events_id_seq', max(id)) FROM \"" + schema
                        + "\".outbox_events");
                run.move("writers stopped, replica caught up, cut over to it on the same port");
                run.loadFor("after", Duration.ofSeconds(3));
                run.assertEveryEventPublishedInKeyOrder("logical-replication cut-over");
            }
        }
    }

    /** Two relays and the writers of one test, on the database the server's port leads to now. */
    private static final class Run implements AutoCloseable {
        private final FaultDatabase db;
        private final PublishedEvents published = new PublishedEvents();
        private final List<OutboxRelay> relays = new ArrayList<>();
        private final Workload workload;
        private final Map<String, Object> moves = new LinkedHashMap<>();
        private final AtomicBoolean loading = new AtomicBoolean();
        private CompletableFuture<Void> load = CompletableFuture.completedFuture(null);
        private int phases;

        Run(FaultDatabase db) {
            this.db = db;
            for (String name : List.of("relay-a", "relay-b")) {
                relays.add(OutboxRelay.builder(db.pool(name, 3), new RecordingSink(published))
                        .config(OutboxRelayConfig.builder().schema(db.schema()).instanceId(name).partitions(8)
                                .leaseDuration(Duration.ofSeconds(4)).renewalInterval(Duration.ofMillis(500))
                                .publishTimeout(Duration.ofSeconds(1))
                                .idlePollMax(Duration.ofMillis(100))
                                .backoffBase(Duration.ofMillis(50)).backoffMax(Duration.ofSeconds(1)).maxAttempts(1000)
                                .build())
                        .build());
            }
            PostgresIdempotentExecutor executor = db.executor("writers", 6, relays.get(0)::wakeUp);
            this.workload = new Workload(executor, new Ledger(), "tenant-" + UUID.randomUUID(), "payments")
                    .duplicates(1).threads(6).partitionKeys(16).callerDeadline(Duration.ofSeconds(120));
            relays.forEach(OutboxRelay::start);
        }

        /** Writers go on in the background, key after key, until {@link #stopLoad()}. */
        void startLoad(String prefix) {
            loading.set(true);
            load = CompletableFuture.runAsync(() -> {
                try {
                    while (loading.get()) {
                        workload.run(prefix + "-" + phases++, 60);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }

        void stopLoad() throws Exception {
            loading.set(false);
            load.get(180, TimeUnit.SECONDS);
        }

        void loadFor(String prefix, Duration duration) throws Exception {
            startLoad(prefix);
            Thread.sleep(duration.toMillis());
            stopLoad();
        }

        /** Waits (bounded) until the relays have published {@code more} events beyond those published now. */
        void awaitPublications(int more) throws InterruptedException {
            int target = published.size() + more;
            assertTrue(BrokerOutageTest.awaitPublications(published, target, 120), "the relays published fewer than "
                    + target + " events: " + published.size());
        }

        void move(String what) {
            moves.put("move " + (moves.size() + 1), what);
        }

        void assertEveryEventPublishedInKeyOrder(String title) throws Exception {
            stopLoad();
            Accounting.awaitPublished(db.jdbi(), workload.tenant(), published, Duration.ofSeconds(120));
            Accounting accounting = Accounting.ofMovedHistory(db.jdbi(), workload.tenant(), published, moves);
            accounting.print(title);
            accounting.assertExact(title);
        }

        @Override
        public void close() throws Exception {
            loading.set(false);
            relays.forEach(OutboxRelay::stop);
        }
    }
}

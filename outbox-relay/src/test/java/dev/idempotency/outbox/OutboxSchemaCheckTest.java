package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a relay checks of the outbox table before it starts: the message_id column of migration V3,
 * the insert-only outbox of V4, and an id sequence that hands out ids one at a time (CACHE 1), on
 * which per-key order rests; and of its DataSource, connections in autocommit.
 */
@Timeout(60)
class OutboxSchemaCheckTest {
    private static final Pattern UUID_TEXT = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

    @Test
    void aRelayRefusesToStartOnConnectionsWithAutocommitOffAndSaysWhatToGiveIt() throws Exception {
        try (OutboxFixture outbox = OutboxFixture.create("schema_autocommit")) {
            DataSource pool = outbox.dataSource();
            DataSource autocommitOff = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                    new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                        Object result = method.invoke(pool, args);
                        if (result instanceof Connection connection) {
                            connection.setAutoCommit(false);
                        }
                        return result;
                    });

            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> OutboxRelay.builder(autocommitOff, new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("in-transactions").build()).build().start());

            assertEquals("outbox relay not started: its DataSource hands out connections with autocommit off, and each of"
                    + " the relay's statements must be a transaction of its own; give the relay a pool in autocommit"
                    + " (HikariCP's default, autoCommit=true)", refused.getMessage());
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_partitions"), "nothing was started");
            try (Connection connection = pool.getConnection()) {
                assertTrue(connection.getAutoCommit(), "the pool's connection went back as it was");
            }
        }
    }

    @Test
    void aRelayRefusesToStartWhenTheIdSequenceCachesIdsAndTheStatementItNamesFixesIt() {
        try (OutboxFixture outbox = OutboxFixture.create("schema_cache")) {
            outbox.execute("ALTER SEQUENCE outbox_events_id_seq CACHE 20");
            String fix = "ALTER SEQUENCE " + outbox.schema() + ".outbox_events_id_seq CACHE 1";

            OutboxSchemaException refused = assertThrows(OutboxSchemaException.class,
                    () -> OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("cached").build()).build().start());

            assertEquals("outbox relay not started: the id sequence " + outbox.schema() + ".outbox_events_id_seq of \""
                    + outbox.schema() + "\".outbox_events has CACHE 20, so ids of one ordering key need not follow"
                    + " commit order and events would be published out of order; fix: " + fix, refused.getMessage());
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_partitions"), "nothing was started");

            outbox.execute(fix);
            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                    .config(outbox.config("fixed").build()).build()) {
                relay.start();
                long id = outbox.insert("t", "orders", "k", "{}");
                outbox.awaitStatus(List.of(id), "published", Duration.ofSeconds(10));
            }
        }
    }

    @Test
    void aRelayRefusesAnOutboxOlderThanItsMigrationsAndNamesHowToMigrate() {
        try (OutboxFixture outbox = OutboxFixture.createAtVersion("schema_v2", "2")) {
            OutboxSchemaException refused = assertThrows(OutboxSchemaException.class,
                    () -> OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("old").build()).build().start());

            assertEquals("outbox relay not started: \"" + outbox.schema() + "\".outbox_events has no message_id column;"
                    + " apply the library's migrations to schema '" + outbox.schema() + "' (IdempotencyMigrations.migrate("
                    + "dataSource, \"" + outbox.schema() + "\"), or the relay's run --migrate)", refused.getMessage());
        }
    }

    @Test
    void aRelayRefusesAnOutboxWithoutTheInsertOnlyTablesOfV4AndSaysHowToUpgrade() {
        try (OutboxFixture outbox = OutboxFixture.createAtVersion("schema_v3", "3")) {
            OutboxSchemaException refused = assertThrows(OutboxSchemaException.class,
                    () -> OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("v3").build()).build().start());

            assertEquals("outbox relay not started: \"" + outbox.schema() + "\".outbox_events predates migration V4 (the"
                    + " insert-only outbox: no txid column), which this relay reads; stop every relay of the old"
                    + " version, apply the library's migrations to schema '" + outbox.schema() + "'"
                    + " (IdempotencyMigrations.migrate(dataSource, \"" + outbox.schema() + "\"), or the relay's run"
                    + " --migrate), then start relays of this version", refused.getMessage());
            assertEquals(0, outbox.number("SELECT count(*) FROM outbox_relay_partitions"), "nothing was started");
        }
    }

    @Test
    void aRelayRefusesAnOutboxWithoutTheTraceContextColumnsOfV9AndSaysHowToUpgrade() {
        try (OutboxFixture outbox = OutboxFixture.createAtVersion("schema_v7", "7")) {
            OutboxSchemaException refused = assertThrows(OutboxSchemaException.class,
                    () -> OutboxRelay.builder(outbox.dataSource(), new RecordingPublisher("r", new PublicationLog()))
                            .config(outbox.config("v7").build()).build().start());

            assertTrue(refused.getMessage().startsWith("outbox relay not started: schema '" + outbox.schema()
                    + "' predates migration V9 (trace context stored with events)"), refused.getMessage());
            assertTrue(refused.getMessage().contains("IdempotencyMigrations.migrate(dataSource, \"" + outbox.schema() + "\")"));
        }
    }

    @Test
    void rowsWrittenBeforeV3KeepTheirDecimalMessageIdAndLaterRowsGetAUuid() {
        try (OutboxFixture outbox = OutboxFixture.createAtVersion("schema_upgrade", "2")) {
            long before = outbox.insert("t", "orders", "k", "{}");
            outbox.migrate();
            long after = outbox.insert("t", "orders", "k", "{}");
            RecordingPublisher publisher = new RecordingPublisher("r", new PublicationLog());

            try (OutboxRelay relay = OutboxRelay.builder(outbox.dataSource(), publisher)
                    .config(outbox.config("upgraded").build()).build()) {
                relay.start();
                outbox.awaitStatus(List.of(before, after), "published", Duration.ofSeconds(10));
            }

            assertEquals(Long.toString(before), publisher.received(before).messageId(),
                    "an event that may already have been sent keeps the id it was sent under");
            String uuid = publisher.received(after).messageId();
            assertTrue(UUID_TEXT.matcher(uuid).matches(), uuid);
            assertEquals(uuid, outbox.string("SELECT message_id::text FROM outbox_events WHERE id = " + after),
                    "the relay sends the id stored in the row");
            assertThrows(IllegalStateException.class, () -> outbox.execute("INSERT INTO outbox_events"
                    + " (tenant_id, topic, partition_key, payload, message_id) VALUES ('t', 'orders', 'k', '{}', NULL)"),
                    "only rows older than the migration may lack a message id");
        }
    }

    @Test
    void theMigrationsLeaveTheIdSequenceAtCacheOneEvenWhereItWasChanged() {
        try (OutboxFixture fresh = OutboxFixture.create("schema_fresh");
             OutboxFixture changed = OutboxFixture.createAtVersion("schema_changed", "2")) {
            changed.execute("ALTER TABLE outbox_events ALTER COLUMN id SET CACHE 20");
            changed.migrate();

            assertEquals(1, idCache(fresh));
            assertEquals(1, idCache(changed));
        }
    }

    @Test
    void anEventWithoutAMessageIdCannotBeWritten() {
        try (OutboxFixture outbox = OutboxFixture.create("schema_null_id")) {
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> outbox.execute(
                    "INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, message_id)"
                            + " VALUES ('t', 'orders', 'k', '{}', NULL)"));

            assertTrue(refused.getMessage().contains("outbox_events_message_id_set"), refused.getMessage());
        }
    }

    private static long idCache(OutboxFixture outbox) {
        return outbox.number("SELECT cache_size FROM pg_sequences WHERE schemaname = '" + outbox.schema()
                + "' AND sequencename = 'outbox_events_id_seq'");
    }
}

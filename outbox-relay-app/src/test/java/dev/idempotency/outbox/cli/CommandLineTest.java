package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every command of {@code java -jar outbox-relay.jar} run as a new user runs it, against a schema
 * that does not exist yet or was never migrated, in-process through the same entry point as
 * {@code main}. ({@code run --migrate} in a process of its own is {@link RelayProcessTest}.)
 */
@Timeout(120)
class CommandLineTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What one command printed and returned. */
    private record Outcome(int exitCode, String out, String err) {
        String all() {
            return out + err;
        }
    }

    @Test
    void migrateCreatesTheTablesInASchemaThatDidNotExistAndASecondMigrateIsANoOp() throws Exception {
        try (TestSchema schema = absentSchema("cli_migrate")) {
            Outcome first = cli(schema, "migrate");
            Outcome second = cli(schema, "migrate");

            assertEquals(0, first.exitCode(), first.all());
            assertTrue(first.out().matches("(?s)schema " + schema.name() + ": [1-9]\\d* migrations applied, now at version \\d+\\R"),
                    first.out());
            assertEquals(0, second.exitCode(), second.all());
            assertTrue(second.out().startsWith("schema " + schema.name() + ": 0 migrations applied"), second.out());
            assertTrue(tables(schema).containsAll(List.of("idempotency_keys", "outbox_events", "outbox_relay_partitions",
                    "outbox_relay_instances", "outbox_retries", "outbox_event_states")), tables(schema).toString());
        }
    }

    @Test
    void runOnASchemaNeverMigratedIsRefusedInOneLineThatNamesTheFixes() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("cli_unmigrated", 1)) {
            Outcome run = cli(schema, "run", "--http-port", "-1");

            assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, run.exitCode(), run.all());
            assertEquals("", run.out());
            String line = run.err().strip();
            assertFalse(line.contains("\n"), "one line: " + run.err());
            assertTrue(line.startsWith("error: schema \"" + schema.name() + "\" has none of the library's tables"), line);
            assertTrue(line.contains("'java -jar outbox-relay.jar migrate --schema " + schema.name() + "'"), line);
            assertTrue(line.contains("'run --migrate'"), line);
            assertTrue(line.contains("--schema"), line);
            assertFalse(line.contains("42P01") || line.contains("Exception"), line);
            assertEquals(List.of(), tables(schema), "nothing was created");
        }
    }

    @Test
    void runOnASchemaMissingALaterMigrationsTablesNamesThemAndTheFix() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("cli_partial", 1)) {
            schema.execute("CREATE TABLE outbox_events (id bigint PRIMARY KEY); CREATE TABLE idempotency_keys (k text)");

            Outcome run = cli(schema, "run", "--http-port", "-1");

            assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, run.exitCode(), run.all());
            assertTrue(run.err().startsWith("error: schema \"" + schema.name() + "\" lacks the tables outbox_relay_partitions, "
                    + "outbox_relay_instances, outbox_retries of a later migration: apply the migrations with "
                    + "'java -jar outbox-relay.jar migrate"), run.err());
        }
    }

    @Test
    void runWithTheWrongSchemaNamesTheSchemaThatHoldsTheOutbox() throws Exception {
        try (TestSchema migrated = TestDatabase.get().newSchema("cli_right", 1);
             TestSchema wrong = TestDatabase.get().newSchema("cli_wrong", 1)) {
            assertEquals(0, cli(migrated, "migrate").exitCode());

            Outcome run = cli(wrong, "run", "--http-port", "-1", "--no-sweeper");

            assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, run.exitCode(), run.all());
            assertTrue(run.err().contains("pass --schema ") && run.err().contains(migrated.name()), run.err());
        }
    }

    @Test
    void deadLettersListsRequeuesAndRefusesAnUnmigratedSchema() throws Exception {
        try (TestSchema schema = absentSchema("cli_dead")) {
            Outcome unmigrated = cli(schema, "dead-letters");
            assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, unmigrated.exitCode(), unmigrated.all());
            assertTrue(unmigrated.err().startsWith("error: schema \"" + schema.name() + "\" has none of the library's tables"),
                    unmigrated.err());

            assertEquals(0, cli(schema, "migrate").exitCode());
            Outcome empty = cli(schema, "dead-letters");
            assertEquals(0, empty.exitCode(), empty.all());
            assertEquals("0 dead letters", empty.out().strip());

            long id = insertDeadLetter(schema);
            Outcome listed = cli(schema, "dead-letters");
            assertTrue(listed.out().startsWith("1 dead letters"), listed.out());
            assertTrue(listed.out().contains(id + "  t1  payments  p1  attempts=3"), listed.out());

            Outcome requeued = cli(schema, "dead-letters", "--requeue", Long.toString(id));
            assertEquals(0, requeued.exitCode(), requeued.all());
            assertEquals("requeued event " + id, requeued.out().strip());
            Outcome again = cli(schema, "dead-letters", "--requeue", Long.toString(id));
            assertEquals(1, again.exitCode(), again.all());
            assertEquals("no dead letter with id " + id, again.out().strip());

            insertDeadLetter(schema);
            insertDeadLetter(schema);
            Outcome all = cli(schema, "dead-letters", "--requeue-all");
            assertEquals(0, all.exitCode(), all.all());
            assertEquals("requeued 2 dead letters", all.out().strip());
        }
    }

    @Test
    void demoOnASchemaThatDidNotExistChargesEachPaymentOnceAndPrintsNoPassword() throws Exception {
        try (TestSchema schema = absentSchema("cli_demo")) {
            String secret = "s3cret-" + schema.name();
            // The test server trusts local connections, so a password in the URL is accepted and ignored.
            String url = TestDatabase.get().url() + (TestDatabase.get().url().contains("?") ? "&" : "?") + "password=" + secret;

            Outcome demo = cliWithUrl(schema, url, "demo", "--payments", "20", "--copies", "3", "--threads", "4");

            assertEquals(0, demo.exitCode(), demo.all());
            assertTrue(demo.out().contains("every payment charged exactly once"), demo.out());
            assertTrue(demo.out().contains("password=***"), demo.out());
            assertFalse(demo.all().contains(secret), demo.all());
        }
    }

    @Test
    void sweeperFlagsAreValidatedNamingTheFlag() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("cli_sweep_flags", 1)) {
            Outcome batch = cli(schema, "run", "--http-port", "-1", "--sweep-batch-size", "0");
            Outcome batches = cli(schema, "run", "--http-port", "-1", "--sweep-batches", "100001");
            Outcome interval = cli(schema, "run", "--http-port", "-1", "--sweep-interval", "1ms");

            assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, batch.exitCode(), batch.all());
            assertEquals("error: --sweep-batch-size must be between 1 and 100000 (was 0)", batch.err().strip());
            assertEquals("error: --sweep-batches must be between 1 and 100000 (was 100001)", batches.err().strip());
            assertTrue(interval.err().startsWith("error: --sweep-interval must be at least 10 ms"), interval.err());
        }
    }

    @Test
    void healthJsonEscapesAnInstanceIdWithAQuoteAndABackslash() throws Exception {
        String instance = "relay \"blue\" \\ 1";

        StatusServer.Health health = StatusServer.Health.ofRelay(true, instance, 3, Duration.ZERO, Duration.ofMinutes(5));

        JsonNode body = JSON.readTree(health.json());
        assertEquals(instance, body.get("instance").asText());
        assertEquals("UP", body.get("status").asText());
        assertEquals(3, body.get("partitions").asInt());
        assertTrue(body.get("database").asBoolean());
    }

    @Test
    void healthIsDownOnceTheSameEventHasOnlyAgedForTheStallWindowThoughTheDatabaseAnswers() throws Exception {
        StatusServer.Health progressing = StatusServer.Health.ofRelay(true, "r", 3, Duration.ofSeconds(299),
                Duration.ofMinutes(5));
        StatusServer.Health stalled = StatusServer.Health.ofRelay(true, "r", 3, Duration.ofSeconds(300),
                Duration.ofMinutes(5));

        assertTrue(progressing.healthy());
        JsonNode body = JSON.readTree(stalled.json());
        assertFalse(stalled.healthy());
        assertEquals("DOWN", body.get("status").asText());
        assertTrue(body.get("stalled").asBoolean());
        assertEquals(300, body.get("stalledSeconds").asInt());
        assertTrue(body.get("database").asBoolean());
    }

    @Test
    void printedUrlsMaskEveryPassword() {
        assertEquals("jdbc:postgresql://db:5432/app?user=u&password=***&sslpassword=***&ssl=true",
                JdbcUrls.redacted("jdbc:postgresql://db:5432/app?user=u&password=p%40ss&sslpassword=k&ssl=true"));
        assertEquals("jdbc:postgresql://u:***@db/app?PASSWORD=***",
                JdbcUrls.redacted("jdbc:postgresql://u:hunter2@db/app?PASSWORD=x"));
        assertEquals("jdbc:postgresql://127.0.0.1:5432/test?user=postgres",
                JdbcUrls.redacted("jdbc:postgresql://127.0.0.1:5432/test?user=postgres"));
    }

    private static Outcome cli(TestSchema schema, String... args) {
        return cliWithUrl(schema, TestDatabase.get().url(), args);
    }

    private static Outcome cliWithUrl(TestSchema schema, String url, String... args) {
        TestDatabase database = TestDatabase.get();
        List<String> command = new ArrayList<>(List.of(args));
        command.addAll(List.of("--jdbc-url", url, "--schema", schema.name()));
        if (database.user() != null) {
            command.addAll(List.of("--db-user", database.user()));
        }
        if (database.password() != null) {
            command.addAll(List.of("--db-password=" + database.password()));
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exitCode = OutboxRelayCli.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
                .execute(command.toArray(String[]::new));
        return new Outcome(exitCode, out.toString(), err.toString());
    }

    /** A schema name of the test's own that does not exist yet, as on a new user's database; dropped at close. */
    private static TestSchema absentSchema(String prefix) throws SQLException {
        TestSchema schema = TestDatabase.get().newSchema(prefix, 1);
        execute("DROP SCHEMA \"" + schema.name() + "\"");
        return schema;
    }

    private static long insertDeadLetter(TestSchema schema) throws SQLException {
        try (Connection c = TestDatabase.get().connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("WITH e AS (INSERT INTO \"" + schema.name() + "\".outbox_events"
                     + " (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'p1', '{}') RETURNING *)"
                     + " INSERT INTO \"" + schema.name() + "\".outbox_retries (event_id, message_id, tenant_id, topic,"
                     + " partition_key, ordering_hash, payload, headers, created_at, status, attempts, last_error)"
                     + " SELECT id, message_id, tenant_id, topic, partition_key, ordering_hash, payload, headers, created_at,"
                     + " 'dead', 3, 'rejected' FROM e RETURNING event_id")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static List<String> tables(TestSchema schema) throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection c = TestDatabase.get().connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT table_name FROM information_schema.tables WHERE table_schema = '"
                     + schema.name() + "' ORDER BY 1")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }

    private static void execute(String sql) throws SQLException {
        try (Connection c = TestDatabase.get().connect(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}

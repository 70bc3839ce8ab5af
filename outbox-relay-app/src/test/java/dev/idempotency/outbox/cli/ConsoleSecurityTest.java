package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.MigratedSchema;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** Who may use the console and what it refuses, over plain HTTP (the browser's view is ConsoleBrowserTest). */
@Timeout(60)
class ConsoleSecurityTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void withCredentialsARequestWithoutThemOrWithWrongOnesIsRefusedWith401AndTheRightOnesAreServed() throws Exception {
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.withCredentials("ops", "s3cret"), false)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            HttpResponse<String> none = ConsoleFixture.get(console, null);
            HttpResponse<String> wrong = ConsoleFixture.get(console + "/dead-letters", basic("ops", "guess"));
            HttpResponse<String> right = ConsoleFixture.get(console, basic("ops", "s3cret"));
            HttpResponse<String> health = ConsoleFixture.get("http://127.0.0.1:" + server.port() + "/health", null);

            assertEquals(401, none.statusCode());
            assertTrue(none.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Basic realm="), none.headers().toString());
            assertEquals(401, wrong.statusCode());
            assertEquals(200, right.statusCode(), right.body());
            assertTrue(right.body().contains("Pending events"), right.body());
            assertEquals(200, health.statusCode(), "/health stays open to probes");
        }
    }

    @Test
    void aReadOnlyConsoleShowsNoRequeueAndRefusesARequeuePostEvenWithTheToken() throws Exception {
        ConsoleFixture.insertDeadLetter(db, 101, "orders", "{\"card\": \"4111\"}");
        ConsoleAccess access = ConsoleAccess.loopbackOnly();
        try (StatusServer server = ConsoleFixture.serve(db, access, true)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            String list = ConsoleFixture.get(console + "/dead-letters", null).body();
            String detail = ConsoleFixture.get(console + "/dead-letters/101", null).body();
            HttpResponse<String> requeue = ConsoleFixture.post(console + "/dead-letters/101/requeue", null,
                    "csrf=" + access.csrfToken());
            HttpResponse<String> requeueAll = ConsoleFixture.post(console + "/dead-letters/requeue-all", null,
                    "csrf=" + access.csrfToken() + "&confirm=yes");

            assertTrue(list.contains("/console/dead-letters/101"), list);
            assertFalse(list.contains("requeue-all"), list);
            assertFalse(detail.contains("/requeue"), detail);
            assertEquals(403, requeue.statusCode());
            assertEquals(403, requeueAll.statusCode());
            assertEquals("dead", ConsoleFixture.status(db, 101));
        }
    }

    @Test
    void aPostWithoutTheConsolesCsrfTokenIsRefusedAndRequeuesNothing() throws Exception {
        ConsoleFixture.insertDeadLetter(db, 102, "orders", "{}");
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.loopbackOnly(), false)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            HttpResponse<String> missing = ConsoleFixture.post(console + "/dead-letters/102/requeue", null, "");
            HttpResponse<String> foreign = ConsoleFixture.post(console + "/dead-letters/102/requeue", null,
                    "csrf=" + ConsoleAccess.loopbackOnly().csrfToken());

            assertEquals(403, missing.statusCode());
            assertEquals(403, foreign.statusCode(), "another process's token");
            assertEquals("dead", ConsoleFixture.status(db, 102));
        }
    }

    @Test
    void whatTheDatabaseHoldsIsEscapedAndThePayloadIsShownOnlyWhenRevealed() throws Exception {
        ConsoleFixture.insertDeadLetter(db, 103, "<script>alert(1)</script>", "{\"secret\": \"<i>s-103</i>\"}");
        ConsoleAccess access = ConsoleAccess.loopbackOnly();
        try (StatusServer server = ConsoleFixture.serve(db, access, false)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            String list = ConsoleFixture.get(console + "/dead-letters", null).body();
            String detail = ConsoleFixture.get(console + "/dead-letters/103", null).body();
            String revealed = ConsoleFixture.post(console + "/dead-letters/103/payload", null, "csrf=" + access.csrfToken()).body();

            assertTrue(list.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), list);
            assertFalse(list.contains("<script>"), list);
            assertFalse(list.contains("<b>bold</b>"), "the last error is escaped too");
            assertFalse(detail.contains("s-103"), detail);
            assertTrue(revealed.contains("&lt;i&gt;s-103&lt;/i&gt;"), revealed);
        }
    }

    @Test
    void withoutCredentialsARequestNamingAnotherHostIsRefusedAgainstDnsRebinding() throws Exception {
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.loopbackOnly(), false);
             java.net.Socket socket = new java.net.Socket("127.0.0.1", server.port())) {
            socket.getOutputStream().write(("GET /console HTTP/1.1\r\nHost: attacker.example:" + server.port()
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

            assertTrue(answer.startsWith("HTTP/1.1 421"), answer);
            assertFalse(answer.contains("csrf"), answer);
            assertEquals(200, ConsoleFixture.get("http://localhost:" + server.port() + "/console", null).statusCode());
        }
    }

    @Test
    void runRefusesToServeTheConsoleOnANonLoopbackHostWithoutCredentials() {
        StringWriter err = new StringWriter();
        CommandLine cli = OutboxRelayCli.commandLine();
        cli.setErr(new PrintWriter(err));
        cli.setOut(new PrintWriter(new StringWriter()));

        int exit = cli.execute("run", "--console", "--http-host", "0.0.0.0", "--jdbc-url",
                "jdbc:postgresql://127.0.0.1:1/none");

        assertEquals(OutboxRelayCli.EXIT_FIX_AND_RETRY, exit, err.toString());
        assertTrue(err.toString().startsWith("error: the console is not served on --http-host 0.0.0.0"), err.toString());
    }

    @Test
    void consoleOptionsTakeLoopbackWithoutCredentialsAndRefuseHalfCredentials() {
        ConsoleOptions options = new ConsoleOptions();
        options.enabled = true;
        assertEquals("local", options.access("127.0.0.1", 0).userFor(null).orElseThrow());
        assertEquals("local", options.access("localhost", 0).userFor(null).orElseThrow());
        options.user = "ops";
        assertThrows(IllegalArgumentException.class, () -> options.access("127.0.0.1", 0));
        options.password = "pw";
        assertTrue(options.access("0.0.0.0", 0).userFor(null).isEmpty(), "credentials are then required");
        assertThrows(IllegalArgumentException.class, () -> options.access("127.0.0.1", -1));
    }
}

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

/**
 * Who may use the console the relay application serves, over plain HTTP (what the console itself refuses
 * is outbox-console's OutboxConsoleTest; the browser's view is ConsoleBrowserTest).
 */
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

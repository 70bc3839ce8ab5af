package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * Where demo and run connect: the URL given, else the local server when something answers there, else
 * an embedded PostgreSQL they start themselves.
 */
@Timeout(180)
class EmbeddedFallbackTest {
    @Test
    void aGivenUrlIsUsedAsGivenAndNoServerIsStarted() throws IOException {
        DatabaseOptions options = new DatabaseOptions();
        options.jdbcUrl = "jdbc:postgresql://127.0.0.1:1/given?user=u";
        options.localUrl = urlAt(closedPort());

        assertNull(options.embeddedIfNoServer());
        assertEquals("jdbc:postgresql://127.0.0.1:1/given?user=u", options.url());
    }

    @Test
    void withNoUrlAServerAnsweringAtTheLocalAddressIsUsedAndNoneIsStarted() throws IOException {
        try (ServerSocket listening = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            DatabaseOptions options = new DatabaseOptions();
            options.localUrl = urlAt(listening.getLocalPort());

            assertNull(options.embeddedIfNoServer());
            assertEquals(urlAt(listening.getLocalPort()), options.url());
        }
    }

    @Test
    void withNoUrlAndNoServerTheDemoRunsOnAnEmbeddedPostgresAndSaysSo() throws IOException {
        assumeTrue(System.getenv("IDEMPOTENCY_JDBC_URL") == null, "IDEMPOTENCY_JDBC_URL is set: the demo would use it");
        CommandLine cli = OutboxRelayCli.commandLine();
        DemoCommand demo = cli.getSubcommands().get("demo").getCommand();
        demo.database.localUrl = urlAt(closedPort());
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();

        int exitCode = cli.setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
                .execute("demo", "--payments", "10", "--copies", "3", "--threads", "4");

        assertEquals(0, exitCode, out + "\n" + err);
        assertTrue(out.toString().matches("(?s)demo run \\S+ against jdbc:postgresql://localhost:\\d+/postgres\\?user=postgres"
                + " \\(embedded\\) .*"), out.toString());
        assertTrue(out.toString().contains("every payment charged exactly once"), out.toString());
    }

    private static String urlAt(int port) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/test?user=postgres";
    }

    /** A loopback port nothing listens on (free a moment ago). */
    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}

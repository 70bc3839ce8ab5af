package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idempotency.benchmarks.harness.BenchmarkMain;
import dev.idempotency.benchmarks.harness.ProgramRun;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the relay sections (5 to 7) with tiny backlogs against the test PostgreSQL (and the local
 * NATS where it answers) to prove each drains, measures and prints its rows. No timing is asserted.
 */
class RelaySectionsProgramTest {

    private static String run(int[] exitCode, String... options) {
        ProgramRun run = ProgramRun.of(options);
        exitCode[0] = run.exitCode();
        return run.output();
    }

    private static List<String> rows(String output, String section) {
        return output.lines().filter(line -> line.startsWith(section)).toList();
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void latencyAndPeerSectionsDrainEveryEventAndPrintTheirRows() {
        int[] exitCode = new int[1];
        String output = run(exitCode, "--sections=latency,peer", "--seconds=1", "--warmup=0", "--jit-warmup=0", "--jit-quiet-within=2",
                "--latency-rate=200", "--peer-events=300");

        assertEquals(0, exitCode[0], output);
        assertFalse(output.contains("FAILED"), output);
        assertFalse(output.contains("ERRORS"), output);
        List<String> latency = rows(output, "6 relay latency");
        assertEquals(2, latency.size(), output);
        assertTrue(latency.get(0).matches(".*commit to publish at 200 events/s.* [1-9]\\d* events measured.*(met|NOT MET): p50 < 10 ms.*"),
                latency.get(0));
        List<String> peer = rows(output, "7 peer outbox");
        assertEquals(2, peer.size(), output);
        assertTrue(peer.get(0).contains("ours: 1 relay drains 300 events"), peer.get(0));
        assertTrue(peer.get(1).matches(".*gruelbox transaction-outbox drains 300 events.*ours/theirs \\d+\\.\\d\\d.*"), peer.get(1));
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void throughputSectionDrainsTheBacklogToNoOpAndJetStream() {
        assumeTrue(natsAnswers(), "no NATS on 127.0.0.1:4222; start nats-server -js to run this test");
        int[] exitCode = new int[1];
        String output = run(exitCode, "--sections=relay", "--relay-events=2000", "--relay-keys=100");

        assertEquals(0, exitCode[0], output);
        List<String> relay = rows(output, "5 relay throughput");
        assertEquals(4, relay.size(), output);
        assertTrue(relay.get(0).matches(".*drain 2000 events to no-op publisher +1 .*(met|NOT MET): >= 50000 events/s.*"), relay.get(0));
        assertTrue(relay.get(1).matches(".*drain 2000 events to no-op publisher +3 .*"), relay.get(1));
        // The stream received every event: the relay's acks were real.
        assertTrue(relay.get(2).matches(".*to JetStream \\(acks\\) +1 .*stream holds 2000 .*"), relay.get(2));
        assertTrue(relay.get(3).matches(".*to JetStream \\(acks\\) +3 .*stream holds 2000 .*"), relay.get(3));
    }

    @Test
    void invalidRelayOptionsAreRefusedNamingTheSetting() {
        int[] exitCode = new int[1];
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        exitCode[0] = BenchmarkMain.run(new String[] {"--sections=relay", "--relay-batch-size=10", "--relay-events-per-key=11"},
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(2, exitCode[0]);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("benchmarks: relayEventsPerKey must be between 1 and 10"),
                err.toString(StandardCharsets.UTF_8));
    }

    private static boolean natsAnswers() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", 4222), 1_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}

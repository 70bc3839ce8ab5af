package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import dev.idempotency.testing.Brokers;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs section 14 with a 3,000-event backlog per broker (about a second each on this machine) against the
 * test PostgreSQL, the local NATS and RabbitMQ and a Kafka broker the section starts, to prove that for
 * each broker the relay, the client alone and the library's publisher alone all delivered every event and the
 * rows report relay / raw with its target and publisher / raw. No timing is asserted.
 */
class BrokerSectionProgramTest {
    private static final int EVENTS = 3000;
    private static final Pattern HOLDS = Pattern.compile("destination holds (\\d+)");

    @BeforeAll
    static void brokers() {
        Brokers.requireNats();
        Brokers.requireRabbitMq();
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void relayAndEachBrokersClientAloneDeliverEveryEventAndTheRowsCompareThem() {
        ProgramRun run = ProgramRun.of("--sections=brokers", "--broker-events=" + EVENTS, "--relay-keys=100");

        assertEquals(0, run.exitCode(), run.output());
        assertFalse(run.output().contains("FAILED"), run.output());
        List<String> rows = run.rows(RelayVsBrokerClient.TITLE);
        assertEquals(12, rows.size(), run.output());
        String[] brokers = {"JetStream", "RabbitMQ", "Kafka"};
        for (int i = 0; i < brokers.length; i++) {
            String relay = rows.get(4 * i);
            String readAhead = rows.get(4 * i + 1);
            String raw = rows.get(4 * i + 2);
            String alone = rows.get(4 * i + 3);
            assertTrue(relay.matches(".*" + brokers[i] + ": relay drains " + EVENTS + " events .* [1-9]\\d* .*relay/raw \\d+\\.\\d\\d"
                    + " +(met|NOT MET): relay/raw >= 0\\.90.*"), relay);
            assertTrue(readAhead.matches(".*" + brokers[i] + ": relay with read-ahead .*read-ahead/without \\d+\\.\\d\\d.*"),
                    readAhead);
            assertTrue(raw.matches(".*" + brokers[i] + ": the client alone publishes the same " + EVENTS + " .* [1-9]\\d* .*limit.*"), raw);
            // Every event reached the broker both ways: the acknowledgements were real (the relay at least once).
            assertTrue(held(relay) >= EVENTS, relay);
            assertTrue(held(readAhead) >= EVENTS, readAhead);
            assertEquals(EVENTS, held(raw), raw);
            assertTrue(alone.matches(".*" + brokers[i] + ": the library's publisher alone publishes the same " + EVENTS
                    + " .*publisher/raw \\d+\\.\\d\\d.*"), alone);
            assertEquals(EVENTS, held(alone), alone);
        }
    }

    private static long held(String row) {
        Matcher matcher = HOLDS.matcher(row);
        assertTrue(matcher.find(), row);
        return Long.parseLong(matcher.group(1));
    }
}

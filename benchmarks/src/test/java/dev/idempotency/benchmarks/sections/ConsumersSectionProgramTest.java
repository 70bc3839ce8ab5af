package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.benchmarks.harness.ProgramRun;
import dev.idempotency.testing.Brokers;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the consumers section (15) with 600 messages per cell against the test PostgreSQL, the local
 * NATS and RabbitMQ and a Kafka broker it starts, to prove each broker's rows are measured and printed: exactly once
 * in both modes, raw, and the bare inserts written both ways, at each batch size (and pgbench's at batch 100), with no error (every message made one payment). No
 * timing is asserted.
 */
class ConsumersSectionProgramTest {

    @BeforeAll
    static void brokersAreRunning() {
        Brokers.requireNats();
        Brokers.requireRabbitMq();
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void consumersSectionPrintsExactlyOnceRawAndBareInsertsForEachBrokerAndBatch() {
        ProgramRun run = ProgramRun.of("--sections=consumers", "--warmup=0", "--jit-warmup=0", "--consumer-messages=600");

        assertEquals(0, run.exitCode(), run.output());
        assertFalse(run.output().contains("FAILED"), run.output());
        assertFalse(run.output().contains("ERRORS"), run.output());
        List<String> rows = run.rows(ConsumerThroughput.TITLE);
        assertEquals(3 * (ConsumerThroughput.BATCHES.length * 5 + 5), rows.size(), run.output());
        int row = 0;
        for (String broker : List.of("JetStream pull", "RabbitMQ prefetch", "Kafka poll")) {
            for (int batch : ConsumerThroughput.BATCHES) {
                for (String mode : List.of("a handler call per message", "one handler call per batch \\(consumeAll, a JDBC batch\\)")) {
                    String ours = rows.get(row++);
                    assertTrue(ours.matches(".*" + broker + ": 600 messages exactly once into payments, " + mode + " +" + batch
                            + " .*ours/raw msg/s \\d+\\.\\d\\d, ours/bare inserts \\d+\\.\\d\\d.*"), ours);
                    assertTrue(batch == ConsumerThroughput.TARGET_BATCH
                            ? ours.matches(".*(met|NOT MET): >= 30000 msg/s and >= 0.5 of raw") : ours.endsWith("reported"), ours);
                }
                assertTrue(rows.get(row++).matches(".*" + broker + ": 600 messages, raw consume and ack +" + batch + " .*"),
                        rows.get(row - 1));
                assertTrue(rows.get(row++).matches(".*the same 600 payment inserts, a transaction .* +" + batch + " .*"),
                        rows.get(row - 1));
                assertTrue(rows.get(row++).matches(".*the same 600 payment inserts as one JDBC batch, .* +" + batch + " .*"),
                        rows.get(row - 1));
                if (batch == ConsumerThroughput.TARGET_BATCH) {
                    assertTrue(rows.get(row++).matches(".*pgbench consumer-batch-100.sql: .* +" + batch
                            + " .*consumeAll/pgbench msg/s \\d+\\.\\d\\d.*"), rows.get(row - 1));
                    assertTrue(rows.get(row++).matches(".*the same 600 messages made in the JVM, exactly once into payments, one "
                            + "handler call per batch \\(consumeAll, a JDBC batch\\), no broker +" + batch + " .*no broker/pgbench msg/s "
                            + "\\d+\\.\\d\\d, " + broker + " consumeAll/no broker msg/s \\d+\\.\\d\\d.*"), rows.get(row - 1));
                    String sideBySide = rows.get(row++);
                    assertTrue(sideBySide.matches(".*" + broker + ": 600 messages exactly once into payments, one handler call per "
                            + "batch \\(consumeAll, a JDBC batch\\), 2 consumers side by side, each on a destination of its own +"
                            + batch + " .*ours/raw msg/s \\d+\\.\\d\\d, ours/bare inserts \\d+\\.\\d\\d; ours/pgbench on 2 connections \\d+\\.\\d\\d.*"
                            + "(met|NOT MET): >= 30000 msg/s and >= 0.5 of raw"), sideBySide);
                    assertTrue(rows.get(row++).matches(".*" + broker + ": 600 messages, raw consume and ack, 2 consumers side by "
                            + "side +" + batch + " .*"), rows.get(row - 1));
                    assertTrue(rows.get(row++).matches(".*pgbench consumer-batch-100.sql on 2 connections, no broker +" + batch
                            + " .*"), rows.get(row - 1));
                }
            }
        }
    }
}

package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.idempotency.outbox.publisher.FreePorts;
import org.junit.jupiter.api.Test;

class BrokersTest {
    @Test
    void aMissingBrokerFailsWithOneLineNamingItAndHowToStartItWithoutAStackTrace() {
        int port = FreePorts.closedPort();

        Brokers.BrokerNotRunning missing = assertThrows(Brokers.BrokerNotRunning.class,
                () -> Brokers.require("RabbitMQ", port, "rabbitmq-server -detached"));

        assertEquals("RabbitMQ is not answering on 127.0.0.1:" + port + ": start it with `rabbitmq-server -detached`"
                + " (or run .ci/run, which starts every service the tests need)", missing.getMessage());
        assertEquals(0, missing.getStackTrace().length);
    }

    @Test
    void theBrokersTheTestsUseAnswer() {
        Brokers.requireRabbitMq();
        Brokers.requireNats();
    }
}

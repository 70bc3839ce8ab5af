package dev.idempotency.testing;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

/**
 * Checks, before a test class starts, that the broker it needs answers, and otherwise fails it with
 * one line naming the broker and how to start it, instead of a connection stack trace from every
 * test's set-up. Call from {@code @BeforeAll}:
 *
 * <pre>{@code @BeforeAll static void broker() { Brokers.requireRabbitMq(); } }</pre>
 */
public final class Brokers {
    /** Where the tests expect RabbitMQ (guest/guest). */
    public static final int RABBITMQ_PORT = 5672;
    /** Where the tests expect NATS with JetStream. */
    public static final int NATS_PORT = 4222;
    private static final String HOST = "127.0.0.1";
    private static final int CONNECT_TIMEOUT_MILLIS = 2000;

    private Brokers() {
    }

    /** Fails with {@link BrokerNotRunning} unless RabbitMQ accepts connections on 127.0.0.1:5672. */
    public static void requireRabbitMq() {
        require("RabbitMQ", RABBITMQ_PORT, "rabbitmq-server -detached");
    }

    /** Fails with {@link BrokerNotRunning} unless NATS accepts connections on 127.0.0.1:4222. */
    public static void requireNats() {
        require("NATS", NATS_PORT, "nats-server -a 127.0.0.1 -p 4222 -js &");
    }

    static void require(String broker, int port, String startCommand) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, port), CONNECT_TIMEOUT_MILLIS);
        } catch (IOException e) {
            throw new BrokerNotRunning(broker + " is not answering on " + HOST + ":" + port + ": start it with `"
                    + startCommand + "` (or run .ci/run, which starts every service the tests need)");
        }
    }

    /** A missing broker: the message says which and how to start it; no stack trace, it would add nothing. */
    public static final class BrokerNotRunning extends AssertionError {
        private static final long serialVersionUID = 1L;

        BrokerNotRunning(String message) {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }
}

package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.Publisher;
import java.util.List;

/**
 * One broker of section 14: where a cell's messages go, the library's publisher to it, and the
 * broker client's own fastest way to publish the same messages with the same acknowledgements.
 */
interface BrokerPath extends AutoCloseable {

    /** The broker's name in the rows, e.g. "JetStream". */
    String name();

    /** How the client alone publishes, for the rows, e.g. "async publish, every ack awaited". */
    String rawWay();

    /** A fresh, empty destination (stream, queue or topic) of the run's own, for one cell. */
    Destination open() throws Exception;

    /** A cell's destination, deleted (where the broker allows) when closed. */
    interface Destination extends AutoCloseable {

        /** A new publisher of the library to this destination, as a relay is given one. */
        Publisher relayPublisher();

        /**
         * Publishes {@code events} with the broker's own client, each built into the message the library's
         * publisher would send (payload, key, message id, headers), and returns the seconds from the first
         * send to the last acknowledgement. Fails when any message was refused or not acknowledged.
         */
        double publishRaw(List<OutboxEvent> events) throws Exception;

        /** Messages the destination holds now: proof the acknowledgements were real. */
        long held() throws Exception;

        @Override
        void close() throws Exception;
    }
}

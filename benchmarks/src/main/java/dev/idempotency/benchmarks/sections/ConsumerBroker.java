package dev.idempotency.benchmarks.sections;

import java.util.List;

/**
 * A broker the consumers section reads from with its own batch API: fills a fresh destination of its
 * own with messages (not timed), then hands them out in batches and acknowledges a batch the broker's
 * way. One implementation per broker; each closes what it opened.
 */
interface ConsumerBroker extends AutoCloseable {

    /** How the rows name it, e.g. "JetStream pull". */
    String label();

    /**
     * A fresh destination holding {@code messages} messages, each with a message id of its own, tenant
     * {@link #TENANT} and an amount as its payload, read in batches of up to {@code batch}.
     */
    Batches fill(int messages, int batch) throws Exception;

    /** The tenant of every message. */
    String TENANT = "t1";

    /** One destination's messages, batch by batch. */
    interface Batches extends AutoCloseable {
        /** The next batch, waiting up to a second for it; empty when nothing came. */
        List<Received> next() throws Exception;

        /** Acknowledges every message of {@code batch}, as the broker's batch API does it. */
        void acknowledge(List<Received> batch) throws Exception;

        /** Returns once every acknowledgement sent so far has reached the broker. */
        void awaitAcknowledgements() throws Exception;
    }

    /** A delivered message: the broker's own object, its id, tenant and amount. */
    record Received(Object message, String messageId, String tenant, long amount) {
    }
}

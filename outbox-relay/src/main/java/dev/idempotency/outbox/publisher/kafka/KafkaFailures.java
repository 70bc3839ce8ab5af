package dev.idempotency.outbox.publisher.kafka;

import dev.idempotency.core.outbox.PublishResult;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.BrokerNotAvailableException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * Decides what a failed send means for the relay. Only errors about the message itself become
 * REJECTED (dead-lettered at once): too large, illegal topic, no write permission on its topic.
 * Everything else (retriable Kafka errors, timeouts, a closed or failed producer, failed
 * authentication, missing cluster-level permission) becomes RETRY, because dead-lettering every
 * event for an outage or a bad credential would turn a pause into an operator's cleanup.
 */
final class KafkaFailures {
    private KafkaFailures() {
    }

    /** The result for an event whose send failed with {@code failure}. */
    static PublishResult toResult(Throwable failure) {
        String error = describe(failure);
        return refusesTheMessage(failure) ? PublishResult.rejected(error) : PublishResult.retry(error);
    }

    /** True for errors no resend of the same record can fix. */
    static boolean refusesTheMessage(Throwable failure) {
        return failure instanceof RecordTooLargeException
                || failure instanceof RecordBatchTooLargeException
                || failure instanceof InvalidTopicException
                || failure instanceof InvalidRecordException
                || failure instanceof TopicAuthorizationException;
    }

    /**
     * True for errors after which the producer is unusable for good (closed, fenced, a broken
     * idempotent sequence, failed authentication, no cluster permission): only a new producer helps.
     */
    static boolean breaksTheProducer(Throwable failure) {
        return failure instanceof IllegalStateException
                || failure instanceof ProducerFencedException
                || failure instanceof OutOfOrderSequenceException
                || failure instanceof AuthenticationException
                || failure instanceof ClusterAuthorizationException
                || failure instanceof UnsupportedVersionException;
    }

    /** True for errors that mean "no broker answered"; UNAVAILABLE when the producer has no broker connection at all. */
    static boolean mayBeAnOutage(Throwable failure) {
        return failure instanceof TimeoutException
                || failure instanceof NetworkException
                || failure instanceof BrokerNotAvailableException;
    }

    static String describe(Throwable failure) {
        String message = failure.getMessage();
        return failure.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }
}

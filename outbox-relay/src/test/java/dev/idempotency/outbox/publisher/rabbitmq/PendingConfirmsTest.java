package dev.idempotency.outbox.publisher.rabbitmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.PublishResult.Status;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * How the broker's answers about a batch's messages (confirms by publish sequence number, single or
 * multiple, nacks, returns, the channel's close) become each event's result: never PUBLISHED for an
 * event the broker did not ack, and each answer about the messages it names only.
 */
class PendingConfirmsTest {
    private static final PublishResult MISSING = PublishResult.retry("no publisher confirm");

    @Test
    void aMultipleConfirmAcksEveryMessageUpToItsSequenceNumberAndNoFurther() {
        PendingConfirms confirms = batch(101, 6);

        confirms.acked(103, true);

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.PUBLISHED, Status.RETRY, Status.RETRY, Status.RETRY),
                statuses(confirms.finish(MISSING)));
    }

    @Test
    void aNackInTheMiddleOfABatchIsRetryForThatMessageAloneAndTheOthersAreStillAcked() {
        PendingConfirms confirms = batch(1, 4);

        confirms.nacked(2, false);
        confirms.acked(1, false);
        // A multiple confirm after the nack covers the rest; the nacked message stays nacked.
        confirms.acked(4, true);

        PublishResult[] results = confirms.finish(MISSING);
        assertEquals(List.of(Status.PUBLISHED, Status.RETRY, Status.PUBLISHED, Status.PUBLISHED), statuses(results));
        assertEquals("RabbitMQ nacked the message (internal broker error)", results[1].error());
    }

    @Test
    void aReturnedMandatoryMessageInTheMiddleIsRetryThoughTheBrokerAcksIt() {
        PendingConfirms confirms = batch(10, 3);

        confirms.returned("m-11", "unroutable: no queue received it (312 NO_ROUTE)");
        confirms.acked(12, true);

        PublishResult[] results = confirms.finish(MISSING);
        assertEquals(List.of(Status.PUBLISHED, Status.RETRY, Status.PUBLISHED), statuses(results));
        assertTrue(results[1].error().startsWith("unroutable"), results[1].error());
    }

    @Test
    void whenTheChannelClosesAfterSomeConfirmsOnlyTheUnconfirmedGetTheFailure() {
        PendingConfirms confirms = batch(7, 5);
        confirms.acked(8, true);

        confirms.failAll(PublishResult.unavailable("channel closed before the confirm"));
        // A confirm racing with the close does not turn a failed message into a published one.
        confirms.acked(11, true);

        assertEquals(List.of(Status.PUBLISHED, Status.PUBLISHED, Status.UNAVAILABLE, Status.UNAVAILABLE, Status.UNAVAILABLE),
                statuses(confirms.finish(MISSING)));
    }

    @Test
    void confirmsAboutAnEarlierBatchOrAfterTheBatchEndedChangeNothing() {
        PendingConfirms confirms = batch(1, 3);
        confirms.acked(1, false);
        confirms.finish(MISSING);
        confirms.acked(3, true);

        confirms.begin(2);
        assertTrue(confirms.expect(4, 0, "m-4"));
        assertTrue(confirms.expect(5, 1, "m-5"));
        // The earlier batch's messages 2 and 3, confirmed late: nothing of this batch.
        confirms.acked(3, true);
        confirms.acked(2, false);
        PublishResult[] results = confirms.finish(MISSING);
        confirms.acked(5, true);

        assertEquals(List.of(Status.RETRY, Status.RETRY), statuses(results));
    }

    @Test
    void awaitReturnsOnceEveryPublishedMessageIsAnsweredAndLeavesUnpublishedEventsToTheCaller() {
        PendingConfirms confirms = new PendingConfirms();
        confirms.begin(3);
        // Event 1 was refused before sending: only events 0 and 2 are published.
        assertTrue(confirms.expect(20, 0, "m-20"));
        assertTrue(confirms.expect(21, 2, "m-21"));
        assertFalse(confirms.await(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50)), "nothing answered yet");

        confirms.acked(21, true);

        assertTrue(confirms.await(System.nanoTime() + TimeUnit.SECONDS.toNanos(5)));
        PublishResult[] results = confirms.finish(MISSING);
        assertEquals(Status.PUBLISHED, results[0].status());
        assertEquals(MISSING, results[1], "not published: the caller's own answer goes there");
        assertEquals(Status.PUBLISHED, results[2].status());
    }

    @Test
    void aSequenceNumberOutOfStepIsRefusedSoThatItsConfirmCannotBeMisread() {
        PendingConfirms confirms = new PendingConfirms();
        confirms.begin(3);
        assertTrue(confirms.expect(1, 0, "m-1"));

        assertFalse(confirms.expect(3, 1, "m-3"), "sequence number 2 went to something else");
    }

    /** A batch of {@code size} events published as sequence numbers {@code first}...; message ids m-(sequence). */
    private static PendingConfirms batch(long first, int size) {
        PendingConfirms confirms = new PendingConfirms();
        confirms.begin(size);
        for (int i = 0; i < size; i++) {
            assertTrue(confirms.expect(first + i, i, "m-" + (first + i)));
        }
        return confirms;
    }

    private static List<Status> statuses(PublishResult[] results) {
        return Arrays.stream(results).map(PublishResult::status).toList();
    }
}

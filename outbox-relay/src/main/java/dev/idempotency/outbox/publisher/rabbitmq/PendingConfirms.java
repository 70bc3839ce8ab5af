package dev.idempotency.outbox.publisher.rabbitmq;

import dev.idempotency.core.outbox.PublishResult;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The messages of the batch in flight on one channel and what the broker said about them: a confirm
 * (ack) makes one PUBLISHED, a nack RETRY, and a return before the ack (an unroutable mandatory
 * message) RETRY. Broker callbacks arrive on the connection's thread; the batch's thread waits in
 * {@link #await(long)} and takes the answers with {@link #finish(PublishResult)}, after which a late
 * callback changes nothing.
 *
 * <p>A batch's messages have consecutive publish sequence numbers (batches take turns on the channel,
 * which publishes nothing else), so the message a confirm is about is found by its distance from the
 * batch's first sequence number: no map, no future per message. A message is answered once; later
 * answers about it (a race between a confirm and the channel's close) are ignored.
 */
final class PendingConfirms {
    /** The batch's results by event index; null while an event waits (or before it was published). */
    private PublishResult[] results;
    /** Sequence number of the batch's first published message; -1 before it. */
    private long first = -1;
    /** Messages published in this batch so far; slot i is sequence number first + i. */
    private int published;
    /** Slots below this one are all answered: where a multiple confirm starts looking. */
    private int lowestOpen;
    /** Published messages not answered yet. */
    private int waiting;
    private int[] eventOfSlot = new int[0];
    private String[] messageIdOfSlot = new String[0];
    private final Map<String, String> returnedByMessageId = new ConcurrentHashMap<>();

    /** Starts a batch of {@code size} events. */
    synchronized void begin(int size) {
        results = new PublishResult[size];
        first = -1;
        published = 0;
        lowestOpen = 0;
        waiting = 0;
        if (eventOfSlot.length < size) {
            eventOfSlot = new int[size];
            messageIdOfSlot = new String[size];
        }
    }

    /**
     * Registers the event at {@code index}, about to be published as {@code sequence}, the batch's next
     * sequence number. False when it is not the next one (the channel published something else): then
     * its confirm could not be told apart, and the caller must not publish it on this channel.
     */
    synchronized boolean expect(long sequence, int index, String messageId) {
        if (first < 0) {
            first = sequence;
        }
        if (sequence - first != published || published >= eventOfSlot.length) {
            return false;
        }
        eventOfSlot[published] = index;
        messageIdOfSlot[published] = messageId;
        published++;
        waiting++;
        return true;
    }

    /** The broker returned the message: RabbitMQ sends basic.return before the ack of the same message. */
    void returned(String messageId, String why) {
        if (messageId != null) {
            returnedByMessageId.put(messageId, why);
        }
    }

    synchronized void acked(long sequence, boolean multiple) {
        answer(sequence, multiple, null);
    }

    synchronized void nacked(long sequence, boolean multiple) {
        answer(sequence, multiple, PublishResult.retry("RabbitMQ nacked the message (internal broker error)"));
    }

    /** Ends every message still waiting with {@code result}: its confirm will not come (the channel closed). */
    synchronized void failAll(PublishResult result) {
        if (results != null && published > 0) {
            answer(first + published - 1, true, result);
        }
    }

    /**
     * Waits until every published message of the batch is answered or {@code deadlineNanos} (a
     * {@link System#nanoTime()}) has passed; false on the deadline or an interrupt (its flag kept).
     */
    synchronized boolean await(long deadlineNanos) {
        try {
            while (waiting > 0) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Ends the batch: its results by event index, {@code missing} for each event not answered (or not
     * published: the caller puts its own answer there); confirms that arrive
     * later find nothing. A return that arrives that late may still turn the next attempt of the same
     * event into RETRY: a harmless extra retry.
     */
    synchronized PublishResult[] finish(PublishResult missing) {
        PublishResult[] answered = results == null ? new PublishResult[0] : results;
        results = null;
        first = -1;
        published = 0;
        waiting = 0;
        Arrays.fill(messageIdOfSlot, null);
        returnedByMessageId.clear();
        for (int i = 0; i < answered.length; i++) {
            if (answered[i] == null) {
                answered[i] = missing;
            }
        }
        return answered;
    }

    /** Answers the waiting message {@code sequence}, or all up to it when {@code multiple}; null means acked. */
    private void answer(long sequence, boolean multiple, PublishResult result) {
        if (results == null || first < 0) {
            return;
        }
        long slot = sequence - first;
        if (slot < 0 || slot >= published) {
            // Not this batch's: a late answer about an earlier batch.
            return;
        }
        int last = (int) slot;
        for (int i = multiple ? lowestOpen : last; i <= last; i++) {
            int event = eventOfSlot[i];
            if (results[event] == null) {
                results[event] = result != null ? result : acked(messageIdOfSlot[i]);
                waiting--;
            }
        }
        while (lowestOpen < published && results[eventOfSlot[lowestOpen]] != null) {
            lowestOpen++;
        }
        if (waiting == 0) {
            notifyAll();
        }
    }

    private PublishResult acked(String messageId) {
        String returned = returnedByMessageId.isEmpty() ? null : returnedByMessageId.remove(messageId);
        return returned == null ? PublishResult.published() : PublishResult.retry(returned);
    }
}

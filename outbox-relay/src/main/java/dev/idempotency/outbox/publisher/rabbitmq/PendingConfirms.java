package dev.idempotency.outbox.publisher.rabbitmq;

import dev.idempotency.core.outbox.PublishResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The messages of the batch in flight on one channel, by publish sequence number, and what the
 * broker said about them: a confirm (ack) makes one PUBLISHED, a nack RETRY, and a return before the
 * ack (an unroutable mandatory message) RETRY. Broker callbacks arrive on the connection's thread.
 */
final class PendingConfirms {
    private record Pending(String messageId, CompletableFuture<PublishResult> result) {
    }

    private final ConcurrentNavigableMap<Long, Pending> bySequence = new ConcurrentSkipListMap<>();
    private final Map<String, String> returnedByMessageId = new ConcurrentHashMap<>();

    /** Registers the message about to be published as {@code sequence}; its result completes on the broker's answer. */
    CompletableFuture<PublishResult> expect(long sequence, String messageId) {
        CompletableFuture<PublishResult> result = new CompletableFuture<>();
        bySequence.put(sequence, new Pending(messageId, result));
        return result;
    }

    /** The broker returned the message: RabbitMQ sends basic.return before the ack of the same message. */
    void returned(String messageId, String why) {
        if (messageId != null) {
            returnedByMessageId.put(messageId, why);
        }
    }

    void acked(long sequence, boolean multiple) {
        for (Pending pending : take(sequence, multiple)) {
            String returned = returnedByMessageId.remove(pending.messageId());
            pending.result().complete(returned == null ? PublishResult.published() : PublishResult.retry(returned));
        }
    }

    void nacked(long sequence, boolean multiple) {
        for (Pending pending : take(sequence, multiple)) {
            pending.result().complete(PublishResult.retry("RabbitMQ nacked the message (internal broker error)"));
        }
    }

    /** Ends every message still waiting with {@code result}: its confirm will not come (the channel closed). */
    void failAll(PublishResult result) {
        for (Pending pending : take(Long.MAX_VALUE, true)) {
            pending.result().complete(result);
        }
    }

    /**
     * Forgets the batch; confirms that arrive later find nothing. A return that arrives that late may
     * still turn the next attempt of the same event into RETRY: a harmless extra retry.
     */
    void clear() {
        bySequence.clear();
        returnedByMessageId.clear();
    }

    /** Removes and returns the messages the answer covers; a message is taken once even if two threads race. */
    private List<Pending> take(long sequence, boolean multiple) {
        NavigableMap<Long, Pending> range = multiple
                ? bySequence.headMap(sequence, true)
                : bySequence.subMap(sequence, true, sequence, true);
        List<Pending> taken = new ArrayList<>();
        for (Long key : range.keySet()) {
            Pending pending = bySequence.remove(key);
            if (pending != null) {
                taken.add(pending);
            }
        }
        return taken;
    }
}

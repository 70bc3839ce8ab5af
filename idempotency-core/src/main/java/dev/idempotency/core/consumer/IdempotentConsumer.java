package dev.idempotency.core.consumer;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.IdempotentTransaction;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyInProgressException;
import java.util.Objects;

/**
 * Applies each message's effects exactly once, however often the broker delivers it: the message
 * id (the event's {@code OutboxEvent.messageId()} our relay sends, a UUID fixed when the event was
 * written, unique across outboxes) becomes the idempotency key, prefixed with this
 * consumer's name so that two consumers of one message each apply it once. Each call returns a
 * {@link Delivery} saying whether to acknowledge or to let the broker redeliver; it never throws
 * for a failed handler.
 *
 * @param <TX> the executor's transaction type
 */
public final class IdempotentConsumer<TX extends IdempotentTransaction> {
    /** Longest accepted consumer name, so that name and message id fit in a key. */
    public static final int MAX_NAME_LENGTH = 100;

    private final IdempotentExecutor<TX> executor;
    private final String name;

    private IdempotentConsumer(IdempotentExecutor<TX> executor, String name) {
        this.executor = executor;
        this.name = name;
    }

    /**
     * A consumer named {@code name} (e.g. {@code billing-projector}); keep the name stable, since
     * it is part of every key the consumer stores.
     */
    public static <TX extends IdempotentTransaction> IdempotentConsumer<TX> create(IdempotentExecutor<TX> executor, String name) {
        Objects.requireNonNull(executor, "executor");
        IdempotencyKeys.requireLabel("name", name, MAX_NAME_LENGTH);
        return new IdempotentConsumer<>(executor, name);
    }

    /**
     * Runs {@code handler} for the message unless an earlier delivery of it already committed. Pass
     * the message id the broker delivered (AMQP {@code message-id}, {@code Nats-Msg-Id}, the
     * {@code Idempotency-Key} header of Kafka or HTTP), never the outbox row id, which repeats across outboxes.
     */
    public <X extends Exception> Delivery consume(String messageId, String tenant, MessageHandler<TX, X> handler) {
        Objects.requireNonNull(handler, "handler");
        String key;
        try {
            IdempotencyKeys.requireLabel("messageId", messageId, IdempotencyKeys.MAX_KEY_LENGTH - MAX_NAME_LENGTH - 1);
            key = name + ":" + messageId;
            IdempotencyKeys.validate(key, tenant);
        } catch (IllegalArgumentException e) {
            return Delivery.failed(Delivery.Outcome.INVALID, e);
        }
        try {
            boolean replayed = executor.run(key, tenant, Boolean.class, tx -> {
                handler.handle(tx);
                return Boolean.TRUE;
            }).replayed();
            return Delivery.of(replayed ? Delivery.Outcome.DUPLICATE : Delivery.Outcome.APPLIED);
        } catch (BusinessFailure e) {
            return Delivery.failed(Delivery.Outcome.FAILED_PERMANENTLY, e);
        } catch (KeyInProgressException e) {
            return Delivery.failed(Delivery.Outcome.IN_PROGRESS, e);
        } catch (InvalidIdempotencyKeyException e) {
            return Delivery.failed(Delivery.Outcome.INVALID, e);
        } catch (Exception e) {
            return Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, e);
        }
    }
}

package dev.idempotency.core.consumer;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.IdempotentTransaction;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.core.internal.ConsumerKeys;
import dev.idempotency.core.internal.tracing.SpanOutcomes;
import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.tracing.Tracing;
import java.util.Objects;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies each message's effects exactly once, however often the broker delivers it: the message
 * id (the event's {@code OutboxEvent.messageId()} our relay sends, a UUID fixed when the event was
 * written, unique across outboxes) becomes the idempotency key, prefixed with this
 * consumer's name so that two consumers of one message each apply it once. Each call returns a
 * {@link Delivery} saying whether to acknowledge, to let the broker redeliver, or to dead-letter;
 * it never throws for a failed handler.
 *
 * <p>A handler that keeps failing is not retried forever: each failed attempt of a message is
 * recorded in the database (as a key of its own, so it survives the rollback and counts across
 * instances), and the delivery whose attempt is the {@code maxAttempts}-th failure gets
 * {@link Delivery.Outcome#DEAD_LETTER}. A message delivered again after that (an operator
 * re-driving it after a fix) gets one more attempt each time. Failures the database reports as
 * transient ({@link TransientFailureException}: deadlocks, outages) are not the message's fault
 * and are not counted.
 *
 * <p>Tracing ({@link Builder#tracing}): each call of
 * {@link #consume(String, String, Function, MessageHandler)} is a CONSUMER span named {@code process}
 * that continues the trace the message carries in its {@code traceparent} header (a child of it when
 * no span is current, else of the current one, and linked to it either way), with the outcome as
 * {@code idempotency.outcome}: {@code first_run}, {@code replay}, {@code business_failure},
 * {@code in_progress}, {@code transient_failure}, {@code invalid} or {@code dead_letter}. The message
 * id, the tenant and the payload are never attributes.
 *
 * @param <TX> the executor's transaction type
 */
public final class IdempotentConsumer<TX extends IdempotentTransaction> {
    private static final Logger log = LoggerFactory.getLogger(IdempotentConsumer.class);

    /** Longest accepted consumer name, so that name and message id fit in a key. */
    public static final int MAX_NAME_LENGTH = ConsumerKeys.MAX_NAME_LENGTH;
    /** Failed attempts of one message before it is dead-lettered, unless set otherwise. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** Upper bound on {@code maxAttempts}: each failed attempt is one small stored key. */
    public static final int MAX_MAX_ATTEMPTS = 100;

    private final IdempotentExecutor<TX> executor;
    private final String name;
    private final int maxAttempts;
    private final Traces traces;

    private IdempotentConsumer(IdempotentExecutor<TX> executor, String name, int maxAttempts, Traces traces) {
        this.executor = executor;
        this.name = name;
        this.maxAttempts = maxAttempts;
        this.traces = traces;
    }

    /**
     * A consumer named {@code name} (e.g. {@code billing-projector}) on {@code executor}; keep the
     * name stable, since it is part of every key the consumer stores. The name is checked at
     * {@link Builder#build()}.
     */
    public static <TX extends IdempotentTransaction> Builder<TX> builder(IdempotentExecutor<TX> executor, String name) {
        return new Builder<>(Objects.requireNonNull(executor, "executor"), name);
    }

    /** The consumer's name, the prefix of its keys. */
    public String name() {
        return name;
    }

    /** Failed attempts of one message after which it is dead-lettered. */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * Runs {@code handler} for the message unless an earlier delivery of it already committed. Pass
     * the message id the broker delivered (AMQP {@code message-id}, {@code Nats-Msg-Id}, the
     * {@code Idempotency-Key} header of Kafka or HTTP), never the outbox row id, which repeats across outboxes.
     */
    public <X extends Exception> Delivery consume(String messageId, String tenant, MessageHandler<TX, X> handler) {
        return consume(messageId, tenant, header -> null, handler);
    }

    /**
     * {@link #consume(String, String, MessageHandler)} for a message whose headers may carry a trace:
     * {@code headers} reads one header of the delivered message by name, null when absent (AMQP
     * headers, NATS headers, Kafka record headers as UTF-8, HTTP request headers). Only
     * {@code traceparent} and {@code tracestate} are read, and only with tracing on; a malformed one
     * is ignored. The call's process span continues that trace (see the class comment).
     */
    public <X extends Exception> Delivery consume(String messageId, String tenant, Function<String, String> headers,
                                                  MessageHandler<TX, X> handler) {
        Objects.requireNonNull(headers, "headers");
        Objects.requireNonNull(handler, "handler");
        if (traces == Traces.none()) {
            return deliver(messageId, tenant, handler);
        }
        W3cContext message = W3cContext.lenient(headers.apply(W3cContext.TRACEPARENT), headers.apply(W3cContext.TRACESTATE));
        try (TracedSpan span = traces.startProcess(name, message)) {
            Delivery delivery = deliver(messageId, tenant, handler);
            span.outcome(SpanOutcomes.of(delivery.outcome()));
            if (SpanOutcomes.failed(delivery.outcome())) {
                span.error(delivery.error().getClass().getName());
            }
            return delivery;
        }
    }

    private <X extends Exception> Delivery deliver(String messageId, String tenant, MessageHandler<TX, X> handler) {
        String key;
        try {
            key = ConsumerKeys.messageKey(name, messageId, tenant);
        } catch (InvalidIdempotencyKeyException | IllegalArgumentException e) {
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
        } catch (TransientFailureException e) {
            return Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, e);
        } catch (Exception e) {
            return afterFailedAttempt(messageId, tenant, e);
        }
    }

    /** Counts the failed attempt; the one that reaches {@code maxAttempts} (or any later one) dead-letters the message. */
    private Delivery afterFailedAttempt(String messageId, String tenant, Exception failure) {
        int attempt;
        try {
            attempt = recordFailedAttempt(messageId, tenant);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            return Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, failure);
        }
        if (attempt < maxAttempts) {
            return Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, failure);
        }
        // The handler's exception text may quote the message; the operator gets its type, the caller the exception.
        log.warn("consumer {} gives up on message {} of tenant {} after {} failed attempts (last: {}); dead-letter it",
                name, messageId, tenant, attempt, failure.getClass().getName());
        return Delivery.failed(Delivery.Outcome.DEAD_LETTER, failure);
    }

    /**
     * Takes the lowest free attempt slot of this message, each slot a key of its own committed by the
     * executor, so two instances failing at once take two slots. Returns the slot's number, or
     * {@code maxAttempts} when all are taken.
     */
    private int recordFailedAttempt(String messageId, String tenant) {
        for (int slot = 1; slot <= maxAttempts; slot++) {
            if (!executor.run(ConsumerKeys.attemptKey(name, messageId, slot), tenant, Boolean.class, tx -> Boolean.TRUE).replayed()) {
                return slot;
            }
        }
        return maxAttempts;
    }

    /** Builds an {@link IdempotentConsumer}; {@code maxAttempts} defaults to {@value #DEFAULT_MAX_ATTEMPTS}. */
    public static final class Builder<TX extends IdempotentTransaction> {
        private final IdempotentExecutor<TX> executor;
        private final String name;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Tracing tracing = Tracing.auto();

        private Builder(IdempotentExecutor<TX> executor, String name) {
            this.executor = executor;
            this.name = name;
        }

        /** Failed attempts of one message after which it is dead-lettered; 1 to {@value #MAX_MAX_ATTEMPTS}. */
        public Builder<TX> maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /** Whether and where calls make process spans; default {@link Tracing#auto()}. */
        public Builder<TX> tracing(Tracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /**
         * The consumer.
         *
         * @throws IllegalArgumentException the name is blank, too long, or holds a character other than
         *         ASCII letters, digits, {@code .}, {@code _} and {@code -} (the key separator {@code :} would
         *         let two consumers' keys collide), or {@code maxAttempts} is out of range
         */
        public IdempotentConsumer<TX> build() {
            ConsumerKeys.requireName(name);
            if (maxAttempts < 1 || maxAttempts > MAX_MAX_ATTEMPTS) {
                throw new IllegalArgumentException("maxAttempts must be between 1 and " + MAX_MAX_ATTEMPTS
                        + " (was " + maxAttempts + ")");
            }
            return new IdempotentConsumer<>(executor, name, maxAttempts, Traces.of(tracing));
        }
    }
}

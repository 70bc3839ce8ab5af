package dev.idempotency.jdbc;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyInProgressException;
import dev.idempotency.core.TransientFailureException;
import dev.idempotency.core.consumer.Delivery;
import dev.idempotency.core.consumer.IdempotentConsumer;
import dev.idempotency.core.internal.ConsumerKeys;
import dev.idempotency.core.internal.tracing.SpanOutcomes;
import dev.idempotency.core.internal.tracing.TracedSpan;
import dev.idempotency.core.internal.tracing.Traces;
import dev.idempotency.core.internal.tracing.W3cContext;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.jdbc.internal.JdbcStatement;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies each message of a batch exactly once, however often the broker delivers it: the batch mode
 * of {@link IdempotentConsumer}, with the same keys (a consumer of a name applies a message once
 * whichever mode delivers it) and the same rules for failed attempts and dead letters. It never throws
 * for a failed handler.
 *
 * <p>One call of {@link #consume} first runs the whole batch in one transaction, without savepoints:
 * <ol>
 * <li>claims every message of the batch in one statement ({@code INSERT ... ON CONFLICT DO NOTHING
 *     RETURNING} over the batch's keys, in one round trip), then, if it did not insert them all, reads
 *     what the others hold, in one round trip more. It stores each key it inserts completed at once,
 *     since the consumer's outcome is known before the handler runs (applied, or nothing commits); the
 *     schema's check (migration V11) lets such a row commit only with the consumer's own commit, so a
 *     handler that commits makes its commit fail. On a schema before V11 it claims them processing and
 *     stores the outcomes before the commit, one write of each key row more (logged once at WARN).
 *     A message whose key another delivery already committed is a replay ({@link Delivery.Outcome#DUPLICATE},
 *     or {@link Delivery.Outcome#FAILED_PERMANENTLY} for a stored business failure): its handler does not run.
 *     A message id given twice in the batch is claimed once; the later copy gets the first's
 *     decision (a replay, never a second run). A key another transaction holds uncommitted is waited for,
 *     at most the executor's wait budget; past it the whole batch gets {@link Delivery.Outcome#IN_PROGRESS}
 *     and nothing of it ran.</li>
 * <li>runs the handler of each claimed message, in the batch's order, on one connection; or, with
 *     {@link #consumeAll}, calls a {@link BatchHandler} once for all of them (once per run of one tenant's
 *     messages), which can write them in one statement instead of a round trip each.</li>
 * <li>checks in one statement that every claim is still in the transaction and seals them (before V11:
 *     stores every applied message's outcome in one statement) and commits once, the {@code COMMIT} sent
 *     with that statement in one round trip (where the executor's pooler check lets our {@code COMMIT}
 *     be a named statement; otherwise on its own, a round trip more). Only then do the
 *     decisions say {@link Delivery.Outcome#APPLIED}. If anything fails before the commit (the
 *     connection dies, the commit fails), nothing of the batch is committed and every claimed message
 *     gets {@link Delivery.Outcome#TRANSIENT_FAILURE}: its redelivery runs it again.</li>
 * </ol>
 * When a handler throws (or its SQL fails and aborts the transaction), that transaction is rolled back
 * and the batch runs again, claimed anew, with each message inside a {@code SAVEPOINT} of its own (and a
 * {@link BatchHandler} called for it alone), in
 * transactions of at most {@value #MAX_MESSAGES_PER_TRANSACTION} distinct messages committed one after
 * another in the batch's order. The failed message is not run again: it is decided from its failure
 * (after a {@link BatchHandler}'s call for several messages failed, which one failed is unknown, so each runs again).
 * A handler that throws then is rolled back to its savepoint: its writes and its outbox events are
 * undone, the others' are kept, and the next handler runs. A failed message's claim is removed, so
 * nothing of it commits: a {@link BusinessFailure} is stored and acknowledged
 * ({@link Delivery.Outcome#FAILED_PERMANENTLY}); any other exception counts a failed attempt like
 * {@link IdempotentConsumer} does, and the {@code maxAttempts}-th one dead-letters the message
 * ({@link Delivery.Outcome#DEAD_LETTER}); a {@link TransientFailureException} or a database error a
 * retry may fix asks for redelivery without counting ({@link Delivery.Outcome#TRANSIENT_FAILURE}). A
 * part that did not commit ends the call: the later parts do not run and their messages get
 * {@link Delivery.Outcome#TRANSIENT_FAILURE}, so what commits is always a prefix of the batch's parts.
 * So a poison message never blocks nor undoes the others; the handlers that ran before it in the first
 * transaction run a second time (their first run's writes were rolled back with it): only a handler's
 * writes through the batch's transaction are exactly once, as in every mode.
 *
 * <p><b>Acknowledge only after {@code consume} returns</b>, from its results: the database commit is
 * inside it. For each {@link Result} whose {@link Delivery#acknowledge()} is true, acknowledge the
 * message (RabbitMQ: one {@code basicAck(lastTag, multiple=true)} when every result up to it
 * acknowledges; JetStream: {@code ack()} each; Kafka: {@code commitSync} the offsets up to the first
 * message that does not acknowledge). {@link Delivery#retryLater()}: let it come again (nack with
 * requeue, {@code nak()}, seek back). Neither: dead-letter it. A crash between the commit and the acks
 * only makes the broker redeliver, and the redelivery is a replay.
 *
 * <p>Costs to know: the batch holds the row locks of its claimed keys (and the outbox's ordering-key
 * locks of events its handlers published) from its claim to its commit, so a redelivery of one of its
 * messages to another consumer waits for the whole batch. The first transaction costs the claim, the
 * handlers' own statements, and one statement storing the outcomes with the commit: two round trips
 * per batch besides the handlers' (three when the claim found keys taken), none per message of its own.
 * A batch with a failed handler costs
 * that again, plus a savepoint per message. The transactions with savepoints hold at most
 * {@value #MAX_MESSAGES_PER_TRANSACTION} messages because each handler that writes then uses a
 * subtransaction, and PostgreSQL caches at most 64 of a transaction's subtransactions: past that,
 * every snapshot any session takes while the transaction is open must look subtransactions up in
 * {@code pg_subtrans} (releasing a savepoint does not help: released subtransactions still count).
 * The batch always runs in transactions of its own, even on an executor that joins its caller's.
 *
 * <p>Tracing ({@link Builder#tracing}): each call is one CONSUMER span named {@code process} for the
 * batch, linked to each message's trace, with the count of each outcome.
 *
 * <p>Thread-safe; each call takes one connection from the executor's pool.
 */
public final class IdempotentBatchConsumer {
    private static final Logger log = LoggerFactory.getLogger(IdempotentBatchConsumer.class);

    /** The most messages one call takes. */
    public static final int MAX_BATCH_SIZE = 10_000;

    /**
     * The most distinct messages handled in one transaction with savepoints (after a handler failed):
     * each handler that writes then takes a subtransaction, and past 64 in one transaction (PostgreSQL's
     * {@code PGPROC_MAX_CACHED_SUBXIDS}) every session's snapshots get slower while it is open. A larger
     * batch is then split into transactions of this many, committed one after another in the batch's order.
     */
    public static final int MAX_MESSAGES_PER_TRANSACTION = 64;

    private static final String SAVEPOINT = "SAVEPOINT idempotent_message";
    private static final String ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT idempotent_message";
    private static final String RELEASE_SAVEPOINT = "RELEASE SAVEPOINT idempotent_message";
    /** Ends one message's savepoint and opens the next one's, in one round trip. */
    private static final String NEXT_SAVEPOINT = RELEASE_SAVEPOINT + ";\n" + SAVEPOINT;
    /** SQLSTATE lock_not_available: the claim waited past the budget on a key another transaction holds. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    /** SQLSTATE in_failed_sql_transaction: a statement after one that aborted the transaction. */
    private static final String IN_FAILED_TRANSACTION = "25P02";

    private final PostgresIdempotentExecutor executor;
    private final String name;
    private final int maxAttempts;
    private final ExecutorSql.BatchStatements sql;
    private final ResultCodec codec;
    private final ResultCodec.StoredResult applied;
    private final String waitBudget;
    private final double retentionSeconds;
    private final Traces traces;
    /** Whether the schema has V11's check, which seals a batch's claims to the consumer's commit; null until the first batch reads it. */
    private volatile Boolean claimsSealedAtCommit;

    private IdempotentBatchConsumer(PostgresIdempotentExecutor executor, String name, int maxAttempts, Traces traces) {
        this.executor = executor;
        this.name = name;
        this.maxAttempts = maxAttempts;
        this.traces = traces;
        this.sql = new ExecutorSql.BatchStatements(executor.config().schema());
        this.codec = new ResultCodec(executor.config());
        // What IdempotentConsumer's executor call stores for an applied message and for an attempt slot.
        this.applied = codec.encode(Boolean.TRUE, Boolean.class);
        this.waitBudget = Math.max(1, executor.config().waitBudget().toMillis()) + "ms";
        this.retentionSeconds = executor.config().retention().toMillis() / 1000.0;
    }

    /**
     * A batch consumer named {@code name} on {@code executor}; a consumer of the same name built with
     * {@link IdempotentConsumer#builder} shares its keys. The name is checked at {@link Builder#build()}.
     */
    public static Builder builder(PostgresIdempotentExecutor executor, String name) {
        return new Builder(Objects.requireNonNull(executor, "executor"), name);
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
     * Applies one message's effects in the batch's transaction, through {@link PostgresTransaction#handle()}
     * and its outbox. Throw {@link BusinessFailure} for a message that can never be applied; any other
     * exception undoes this message's writes only. Never commit, roll back or close the handle: a
     * handler that does makes {@link #consume} throw {@link IllegalStateException}. Its commit fails and
     * nothing of the batch is committed (migration V11's check); on a schema before V11 it commits, and
     * the messages whose writes it committed are stored as failed, for an operator to reconcile.
     *
     * @param <M> the broker's message type
     */
    @FunctionalInterface
    public interface Handler<M> {
        void handle(PostgresTransaction tx, M message) throws Exception;
    }

    /**
     * Applies the effects of several messages of one tenant in one call, in the batch's transaction
     * (for {@link #consumeAll}): one statement for all of them, a JDBC batch, saves the round trip per
     * message that a {@link Handler} costs. {@code messages} are the batch's messages to run, in its
     * order: never a replay, a copy or an invalid one. {@link PostgresTransaction#tenant()} is theirs,
     * {@link PostgresTransaction#key()} the first one's, and its outbox's events commit with them all.
     * When the call throws, its transaction rolls back and each message is run again by a call of its
     * own, {@code messages} holding it alone, as {@link Handler} runs (see {@link #consumeAll}); so a
     * message's writes must not depend on the others of its call. Never commit, roll back or close the
     * handle (as for {@link Handler}).
     *
     * @param <M> the broker's message type
     */
    @FunctionalInterface
    public interface BatchHandler<M> {
        void handle(PostgresTransaction tx, List<M> messages) throws Exception;
    }

    /**
     * One message of a batch and what to tell the broker about it, after the batch's commit.
     *
     * @param message the message as given to {@link #consume}
     * @param delivery acknowledge, redeliver or dead-letter (see {@link Delivery})
     * @param <M> the broker's message type
     */
    public record Result<M>(M message, Delivery delivery) {
    }

    /**
     * Handles {@code messages}, each once across every delivery, in one transaction, or after a failed
     * handler in one per {@value #MAX_MESSAGES_PER_TRANSACTION} distinct messages (see the class comment);
     * returns one result per message, in the same order, once every transaction has committed or rolled back.
     *
     * @param messageId reads a message's id, its idempotency key within this consumer (AMQP
     *        {@code message-id}, {@code Nats-Msg-Id}, the relay's {@code Idempotency-Key} header), never
     *        the outbox row id; a malformed one makes that message {@link Delivery.Outcome#INVALID}
     * @param tenant reads a message's tenant
     * @throws IllegalArgumentException more than {@value #MAX_BATCH_SIZE} messages
     * @throws IllegalStateException a handler committed, rolled back or closed the batch's transaction
     *         (nothing of its part committed, unless the schema predates migration V11; the parts before
     *         it did, and their redelivery is a replay: acknowledge nothing)
     * @throws PoolerBreaksPreparedStatementsException the executor refused its pool's connection pooler
     * @throws RuntimeException the database refused the claim for a reason no retry fixes (for example
     *         {@link dev.idempotency.core.SchemaNotMigratedException}); nothing ran
     */
    public <M> List<Result<M>> consume(List<M> messages, Function<? super M, String> messageId,
                                       Function<? super M, String> tenant, Handler<? super M> handler) {
        return consume(messages, messageId, tenant, (message, header) -> null, handler);
    }

    /**
     * {@link #consume(List, Function, Function, Handler)} for messages whose headers may carry a trace:
     * {@code headers} reads one header of a message by name, null when absent (as
     * {@link IdempotentConsumer#consume(String, String, Function, dev.idempotency.core.consumer.MessageHandler)}
     * reads them). Only {@code traceparent} and {@code tracestate} are read, and only with tracing on; a
     * malformed one is ignored. See {@link Builder#tracing} for the span the call makes.
     */
    public <M> List<Result<M>> consume(List<M> messages, Function<? super M, String> messageId,
                                       Function<? super M, String> tenant, BiFunction<? super M, String, String> headers,
                                       Handler<? super M> handler) {
        Objects.requireNonNull(handler, "handler");
        return consume(messages, messageId, tenant, headers, (tx, one) -> handler.handle(tx, one.get(0)), false);
    }

    /**
     * {@link #consume(List, Function, Function, Handler)}, with the handler called once for every run of
     * consecutive messages of one tenant to apply (for a batch of one tenant, once), so that it can
     * write them all in one statement. If that call throws, its transaction rolls back and the batch
     * runs again, claimed anew, as after a failed {@link Handler}: each message in a savepoint of its
     * own and a call of its own, decided from how that call ends. Results, acknowledgements and
     * failures are as {@link #consume(List, Function, Function, Handler)}'s.
     */
    public <M> List<Result<M>> consumeAll(List<M> messages, Function<? super M, String> messageId,
                                          Function<? super M, String> tenant, BatchHandler<M> handler) {
        return consumeAll(messages, messageId, tenant, (message, header) -> null, handler);
    }

    /**
     * {@link #consumeAll(List, Function, Function, BatchHandler)} for messages whose headers may carry a
     * trace, read as {@link #consume(List, Function, Function, BiFunction, Handler)} reads them.
     */
    public <M> List<Result<M>> consumeAll(List<M> messages, Function<? super M, String> messageId,
                                          Function<? super M, String> tenant, BiFunction<? super M, String, String> headers,
                                          BatchHandler<M> handler) {
        Objects.requireNonNull(handler, "handler");
        return consume(messages, messageId, tenant, headers, handler, true);
    }

    /** Both modes: {@code together} calls {@code handler} once per run of one tenant's messages, else once per message. */
    private <M> List<Result<M>> consume(List<M> messages, Function<? super M, String> messageId,
                                        Function<? super M, String> tenant, BiFunction<? super M, String, String> headers,
                                        BatchHandler<M> handler, boolean together) {
        Objects.requireNonNull(messages, "messages");
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(headers, "headers");
        if (messages.size() > MAX_BATCH_SIZE) {
            throw new IllegalArgumentException("a batch holds at most " + MAX_BATCH_SIZE + " messages (was "
                    + messages.size() + "); split it");
        }
        if (traces == Traces.none()) {
            return deliver(messages, messageId, tenant, handler, together);
        }
        List<W3cContext> contexts = new ArrayList<>(messages.size());
        for (M message : messages) {
            contexts.add(W3cContext.lenient(headers.apply(message, W3cContext.TRACEPARENT),
                    headers.apply(message, W3cContext.TRACESTATE)));
        }
        try (TracedSpan span = traces.startBatchProcess(name, contexts)) {
            List<Result<M>> results = deliver(messages, messageId, tenant, handler, together);
            Map<Delivery.Outcome, Integer> counts = new EnumMap<>(Delivery.Outcome.class);
            Exception firstError = null;
            for (Result<M> result : results) {
                Delivery.Outcome outcome = result.delivery().outcome();
                counts.merge(outcome, 1, Integer::sum);
                if (firstError == null && SpanOutcomes.failed(outcome)) {
                    firstError = result.delivery().error();
                }
            }
            counts.forEach((outcome, count) -> span.messages(SpanOutcomes.of(outcome), count));
            if (counts.size() == 1) {
                span.outcome(SpanOutcomes.of(counts.keySet().iterator().next()));
            }
            if (firstError != null) {
                span.error(firstError.getClass().getName());
            }
            return results;
        }
    }

    private <M> List<Result<M>> deliver(List<M> messages, Function<? super M, String> messageId,
                                        Function<? super M, String> tenant, BatchHandler<M> handler, boolean together) {
        Batch<M> batch = new Batch<>(messages);
        for (int i = 0; i < messages.size(); i++) {
            M message = messages.get(i);
            try {
                String messageTenant = tenant.apply(message);
                String id = messageId.apply(message);
                batch.add(i, messageTenant, id, ConsumerKeys.messageKey(name, id, messageTenant));
            } catch (InvalidIdempotencyKeyException | IllegalArgumentException e) {
                batch.decide(i, Delivery.failed(Delivery.Outcome.INVALID, e));
            }
        }
        List<Claim> claims = new ArrayList<>(batch.claims.values());
        if (claims.isEmpty()) {
            return batch.results();
        }
        Failed failed = runWithoutSavepoints(batch, claims, handler, together);
        if (failed == null) {
            return batch.results();
        }
        // A handler failed: nothing of the batch committed. Again, each message in a savepoint of its own.
        batch.undecide(claims);
        for (int from = 0; from < claims.size(); from += MAX_MESSAGES_PER_TRANSACTION) {
            List<Claim> part = claims.subList(from, Math.min(claims.size(), from + MAX_MESSAGES_PER_TRANSACTION));
            if (!run(batch, part, handler, failed)) {
                // The parts commit in the batch's order: after one that did not, the later ones do not run.
                batch.decideUndecided(claims, Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, new TransientFailureException(
                        "An earlier part of the batch did not commit, so this message did not run. Redeliver it.",
                        null, null)));
                break;
            }
        }
        return batch.results();
    }

    /** The message whose handler failed when the batch ran without savepoints, and how; index -1 when unknown. */
    private record Failed(int index, Exception error) {
    }

    /**
     * Runs the whole batch in one transaction without a savepoint: a round trip per message fewer, and no
     * subtransaction. Returns null when every message is decided (committed, or undone as a whole); else,
     * rolled back, the message whose handler failed, for the batch to run again with savepoints.
     */
    private <M> Failed runWithoutSavepoints(Batch<M> batch, List<Claim> claims, BatchHandler<M> handler, boolean together) {
        Handle handle = openAndBegin(batch, claims);
        if (handle == null) {
            return null;
        }
        try {
            List<Claim> claimed = claimOrDecide(handle, batch, claims, true);
            if (claimed == null) {
                return null;
            }
            List<Claim> completed = new ArrayList<>();
            boolean sealed = claimsSealedAtCommit(handle.getConnection()); // read by the claim already
            List<Claim> storedCompleted = claimed.stream().filter(claim -> claim.storedCompletedRow != null).toList();
            boolean wroteEvents = false;
            for (List<Claim> call : together ? byTenantRuns(claimed) : one(claimed)) {
                TransactionOutbox outbox = newOutbox(call.get(0));
                try {
                    wroteEvents |= apply(handle, batch, claimed, call, handler, outbox, completed);
                } catch (TransactionEndedByHandlerException e) {
                    throw e;
                } catch (Exception e) {
                    requireOpenTransaction(handle, batch, claimed, call);
                    outbox.discard();
                    outbox.close();
                    RuntimeException failure = e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
                    if (CallbackRunner.connectionClosed(handle) || !rolledBack(handle, failure)) {
                        decideAll(batch, claimed, undone(failure));
                        return null;
                    }
                    // An aborted transaction fails every statement after the one that aborted it: not this handler's own
                    // failure; and a call for several messages does not say whose it was.
                    boolean own = call.size() == 1 && !IN_FAILED_TRANSACTION.equals(DatabaseErrors.sqlState(e));
                    return new Failed(own ? call.get(0).index : -1, e);
                }
            }
            try {
                completeAndCommit(handle, completed, sealed, storedCompleted);
            } catch (RuntimeException e) {
                rollbackQuietly(handle, e);
                decideAll(batch, claimed, undone(e));
                return null;
            }
            if (wroteEvents) {
                signalOutboxCommit();
            }
            return null;
        } finally {
            closeQuietly(handle);
        }
    }

    /** Each claim a call of its own. */
    private static List<List<Claim>> one(List<Claim> claimed) {
        List<List<Claim>> calls = new ArrayList<>(claimed.size());
        for (Claim claim : claimed) {
            calls.add(List.of(claim));
        }
        return calls;
    }

    /** The claims cut into runs of consecutive claims of one tenant, in the batch's order: a call of a {@link BatchHandler} each. */
    private static List<List<Claim>> byTenantRuns(List<Claim> claimed) {
        List<List<Claim>> calls = new ArrayList<>();
        List<Claim> run = new ArrayList<>();
        for (Claim claim : claimed) {
            if (!run.isEmpty() && !run.get(0).tenant.equals(claim.tenant)) {
                calls.add(run);
                run = new ArrayList<>();
            }
            run.add(claim);
        }
        if (!run.isEmpty()) {
            calls.add(run);
        }
        return calls;
    }

    /** Rolls the batch's transaction back; false when that failed too (the connection is gone). */
    private static boolean rolledBack(Handle handle, RuntimeException cause) {
        try {
            handle.rollback();
            return true;
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
            return false;
        }
    }

    private static void decideAll(Batch<?> batch, List<Claim> claims, Delivery delivery) {
        for (Claim claim : claims) {
            batch.decide(claim.index, delivery);
        }
    }

    /** A handle in a transaction, or null with {@code claims} decided when the pool gave no connection. */
    private Handle openAndBegin(Batch<?> batch, List<Claim> claims) {
        executor.checkConnectionPooler();
        try {
            Handle handle = executor.jdbi().open();
            try {
                handle.begin();
                return handle;
            } catch (RuntimeException e) {
                closeQuietly(handle);
                throw e;
            }
        } catch (RuntimeException e) {
            batch.decideUndecided(claims, undone(e));
            return null;
        }
    }

    /**
     * Claims {@code claims} on {@code handle}, sealed to the consumer's commit where the schema has
     * V11's check, and then stored completed where {@code storeCompleted}; returns those claimed, or
     * null with them decided when the claim failed in a way a redelivery may not (rolled back).
     *
     * @throws RuntimeException the claim failed in a way no retry fixes
     */
    private List<Claim> claimOrDecide(Handle handle, Batch<?> batch, List<Claim> claims, boolean storeCompleted) {
        try {
            boolean sealed = claimsSealedAtCommit(handle.getConnection());
            return claim(handle.getConnection(), batch, claims, sealed, storeCompleted && sealed);
        } catch (RuntimeException e) {
            rollbackQuietly(handle, e);
            if (LOCK_NOT_AVAILABLE.equals(DatabaseErrors.sqlState(e))) {
                batch.decideUndecided(claims, Delivery.failed(Delivery.Outcome.IN_PROGRESS, new KeyInProgressException(
                        "A message of the batch is being applied by another transaction for longer than the wait "
                                + "budget of " + executor.config().waitBudget().toMillis() + " ms; nothing of its "
                                + "part of the batch ran. Redeliver it later.", e)));
                return null;
            }
            RuntimeException translated = DatabaseErrors.schemaMissing(
                    DatabaseErrors.translate(e, name, claims.get(0).tenant), executor.config().schema(),
                    "IdempotencyConfig.schema");
            if (translated instanceof TransientFailureException retryable) {
                batch.decideUndecided(claims, Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, retryable));
                return null;
            }
            throw translated;
        }
    }

    /**
     * Claims, handles and commits one part of the batch's distinct messages in one transaction, each
     * message in a savepoint of its own, deciding each; {@code failed}'s message is not run again but
     * decided from its failure. Returns whether the transaction committed.
     */
    private <M> boolean run(Batch<M> batch, List<Claim> part, BatchHandler<M> handler, Failed failed) {
        Handle handle = openAndBegin(batch, part);
        if (handle == null) {
            return false;
        }
        try {
            List<Claim> claimed = claimOrDecide(handle, batch, part, false);
            if (claimed == null) {
                return false;
            }
            try {
                handleAndCommit(handle, batch, claimed, handler, failed);
                return true;
            } catch (TransactionEndedByHandlerException e) {
                throw e;
            } catch (RuntimeException e) {
                rollbackQuietly(handle, e);
                decideAll(batch, claimed, undone(e));
                return false;
            }
        } finally {
            closeQuietly(handle);
        }
    }

    /** Closes the handle, whose connection may have died with the batch; the decisions are made already. */
    private static void closeQuietly(Handle handle) {
        try {
            handle.close();
        } catch (RuntimeException e) {
            log.debug("closing the batch's handle failed after its transaction ended", e);
        }
    }

    /**
     * Whether the schema has V11's check, by which a batch's claims commit only with the consumer's own
     * commit, a handler's commit fails, and so a claim may be stored completed. Read once per consumer;
     * a schema before V11 is logged once.
     */
    private boolean claimsSealedAtCommit(Connection connection) {
        Boolean known = claimsSealedAtCommit;
        if (known == null) {
            known = sql.findBatchClaimsCheck.queryFirst(connection, call -> { }, row -> row.getBoolean(1)).orElse(false);
            if (!known) {
                log.warn("batch consumer {}: schema \"{}\" predates migration V11, so each batch claims its keys as "
                        + "processing and then completes them, one write of each key more; apply the migrations "
                        + "(IdempotencyMigrations.migrate) to claim them completed", name, executor.config().schema());
            }
            claimsSealedAtCommit = known;
        }
        return known;
    }

    /**
     * Claims the part's keys, stored completed (with the consumer's result) where {@code completed},
     * else processing, marking the transaction to be sealed at commit where {@code sealed}; decides the
     * messages others committed; returns the claimed, in the batch's order.
     */
    private List<Claim> claim(Connection connection, Batch<?> batch, List<Claim> part, boolean sealed, boolean completed) {
        List<String> tenants = new ArrayList<>(part.size());
        List<String> keys = new ArrayList<>(part.size());
        for (Claim claim : part) {
            tenants.add(claim.tenant);
            keys.add(claim.key);
        }
        Map<Scope, String> inserted = new HashMap<>(); // the physical row (ctid) of each key row the claim inserted
        Map<Scope, Stored> found = new HashMap<>();
        try (JdbcStatement.Call call = sql.claimBatch.on(connection)) {
            call.text("waitBudget", waitBudget).number("retentionSeconds", retentionSeconds)
                    .text("batchClaims", sealed ? "open" : "").text("status", completed ? "completed" : "processing")
                    .text("result", completed ? applied.json() : null).text("resultType", completed ? applied.typeName() : null)
                    .textArray("tenants", tenants).textArray("keys", keys);
            call.executeAll().close(); // lock_timeout bounded
            try (ResultSet rows = call.nextRows()) {
                while (rows.next()) {
                    inserted.put(new Scope(rows.getString(1), rows.getString(2)), rows.getString(3));
                }
            }
            call.nextRows().close(); // lock_timeout restored
            List<Claim> taken = part.stream().filter(claim -> !inserted.containsKey(new Scope(claim.tenant, claim.key))).toList();
            if (!taken.isEmpty()) {
                readKeys(connection, taken, found);
            }
        } catch (SQLException e) {
            throw JdbcStatement.failure(e);
        }
        List<Claim> claimed = new ArrayList<>();
        for (Claim claim : part) {
            Scope scope = new Scope(claim.tenant, claim.key);
            Stored stored = found.get(scope);
            claim.storedCompletedRow = completed ? inserted.get(scope) : null;
            claim.rewrittenWithEvents = false;
            if (inserted.containsKey(scope) || (stored != null && stored.reclaimable && reclaim(connection, claim))) {
                claimed.add(claim);
            } else if (stored == null) {
                // Its row was there when the insert ran and gone when the read did (purged or released meanwhile).
                batch.decide(claim.index, Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, new TransientFailureException(
                        "The key of a message of the batch changed while it was claimed; nothing of it ran. Redeliver it.",
                        null, null)));
            } else if ("completed".equals(stored.status)) {
                batch.decide(claim.index, Delivery.of(Delivery.Outcome.DUPLICATE));
            } else if ("failed".equals(stored.status)) {
                batch.decide(claim.index, Delivery.failed(Delivery.Outcome.FAILED_PERMANENTLY, codec.decodeFailure(stored.failure)));
            } else {
                batch.decide(claim.index, Delivery.failed(Delivery.Outcome.IN_PROGRESS, new KeyInProgressException(
                        "A message of the batch is held by a lease that has not settled; redeliver it later.")));
            }
        }
        return claimed;
    }

    /** Reads what the keys of {@code taken}, which the claim did not insert, hold: a round trip only batches with replays pay. */
    private void readKeys(Connection connection, List<Claim> taken, Map<Scope, Stored> found) throws SQLException {
        try (JdbcStatement.Call call = sql.readBatchKeys.on(connection)) {
            bindKeys(call, taken);
            try (ResultSet rows = call.executeAll()) {
                while (rows.next()) {
                    found.put(new Scope(rows.getString(1), rows.getString(2)),
                            new Stored(rows.getString(3), rows.getString(4), rows.getBoolean(5)));
                }
            }
        }
    }

    /** Takes over an expired, settled key as the executor does ({@link ExecutorSql#reclaimExpiredKey}). */
    private boolean reclaim(Connection connection, Claim claim) {
        return sql.reclaimExpiredKey.update(connection, call -> call.text("tenant", claim.tenant).text("key", claim.key)
                .bytes("fingerprint", null).bigint("leaseToken", null).number("leaseSeconds", null)
                .number("retentionSeconds", retentionSeconds)) == 1;
    }

    private <M> void handleAndCommit(Handle handle, Batch<M> batch, List<Claim> claimed, BatchHandler<M> handler,
                                     Failed failed) {
        Connection connection = handle.getConnection();
        List<Claim> completed = new ArrayList<>();
        List<Claim> released = new ArrayList<>();
        List<Claim> failedAttempts = new ArrayList<>();
        Map<Claim, Exception> errors = new HashMap<>();
        Map<Claim, String> businessFailures = new LinkedHashMap<>();
        boolean wroteEvents = false;
        String beforeNext = SAVEPOINT;
        for (Claim claim : claimed) {
            if (!beforeNext.isEmpty()) {
                JdbcStatement.executeUnnamed(connection, beforeNext);
            }
            TransactionOutbox outbox = newOutbox(claim);
            try {
                if (claim.index == failed.index()) {
                    throw failed.error(); // it failed without savepoints: decided from that, not run again
                }
                wroteEvents |= apply(handle, batch, claimed, List.of(claim), handler, outbox, completed);
                beforeNext = NEXT_SAVEPOINT;
            } catch (TransactionEndedByHandlerException e) {
                throw e;
            } catch (Exception e) {
                requireOpenTransaction(handle, batch, claimed, List.of(claim));
                outbox.discard();
                outbox.close();
                // Undoes this message's writes (and clears an aborted transaction), keeping the others'.
                JdbcStatement.executeUnnamed(connection, ROLLBACK_TO_SAVEPOINT);
                beforeNext = ""; // the savepoint stays, for the next message
                if (e instanceof BusinessFailure failure) {
                    businessFailures.put(claim, codec.encodeFailure(failure));
                    batch.decide(claim.index, Delivery.failed(Delivery.Outcome.FAILED_PERMANENTLY, failure));
                    continue;
                }
                released.add(claim);
                Exception error = e instanceof RuntimeException runtime ? DatabaseErrors.translate(runtime, claim.key, claim.tenant) : e;
                if (error instanceof TransientFailureException) {
                    batch.decide(claim.index, Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, error));
                } else {
                    failedAttempts.add(claim);
                    errors.put(claim, error);
                }
            }
        }
        if (!claimed.isEmpty()) {
            JdbcStatement.executeUnnamed(connection, RELEASE_SAVEPOINT);
        }
        complete(connection, completed);
        for (Map.Entry<Claim, String> failure : businessFailures.entrySet()) {
            Claim claim = failure.getKey();
            sql.failKey.update(connection, call -> call.text("tenant", claim.tenant).text("key", claim.key)
                    .text("failure", failure.getValue()));
        }
        if (!released.isEmpty()) {
            sql.releaseBatchClaims.update(connection, call -> bindKeys(call, released));
        }
        Map<Claim, Integer> attempts = new HashMap<>();
        for (Claim claim : failedAttempts) {
            attempts.put(claim, takeAttemptSlot(connection, claim));
        }
        if (claimsSealedAtCommit(connection)) { // read by the claim already
            sql.sealBatchClaims.execute(connection, call -> bindSeal(call, List.of()));
        }
        handle.commit();
        for (Claim claim : failedAttempts) {
            int attempt = attempts.get(claim);
            Exception error = errors.get(claim);
            if (attempt < maxAttempts) {
                batch.decide(claim.index, Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, error));
            } else {
                // The handler's exception text may quote the message; the operator gets its type, the caller the exception.
                log.warn("batch consumer {} gives up on message {} of tenant {} after {} failed attempts (last: {}); "
                        + "dead-letter it", name, claim.messageId, claim.tenant, attempt, error.getClass().getName());
                batch.decide(claim.index, Delivery.failed(Delivery.Outcome.DEAD_LETTER, error));
            }
        }
        if (wroteEvents) {
            signalOutboxCommit();
        }
    }

    /**
     * Refuses to go on when the handler's call for {@code current} committed, rolled back or closed the
     * batch's transaction through Jdbi. With V11's check a commit fails and nothing of the batch is
     * left to mark. Before V11, the batch's claims were committed as processing
     * with the handlers' writes so far: the messages whose handlers ran and kept their writes
     * ({@code current} and those applied) are marked failed ({@link CallbackRunner#ENDED_BY_CALLBACK},
     * as the executor marks its own), so retries see it rather than a key stuck in progress or a
     * second run; the other claims are removed, so their messages run when redelivered.
     */
    private void requireOpenTransaction(Handle handle, Batch<?> batch, List<Claim> claimed, List<Claim> current) {
        if (!handle.isClosed() && (CallbackRunner.connectionClosed(handle) || handle.isInTransaction())) {
            return; // a connection that died is the batch's failure, not the handler's breach
        }
        int marked = 0;
        if (!handle.isClosed()) {
            Connection connection = handle.getConnection();
            String failure = codec.encodeFailure(new BusinessFailure(CallbackRunner.ENDED_BY_CALLBACK, "A handler of the "
                    + "batch ended its transaction itself; what the handlers wrote may have been committed without a "
                    + "stored result. Reconcile by hand."));
            List<Claim> rest = new ArrayList<>();
            for (Claim claim : claimed) {
                Delivery decided = batch.decisions[claim.index];
                if (current.contains(claim) || (decided != null && decided.outcome() == Delivery.Outcome.APPLIED)) {
                    marked += sql.failAbandonedKey.update(connection, call -> call.text("tenant", claim.tenant)
                            .text("key", claim.key).text("failure", failure));
                } else {
                    rest.add(claim);
                }
            }
            if (!rest.isEmpty()) {
                sql.releaseBatchClaims.update(connection, call -> bindKeys(call, rest));
            }
        }
        throw new TransactionEndedByHandlerException("The handler of a message of batch consumer " + name + " committed, "
                + "rolled back or closed the batch's transaction. " + (marked > 0 ? marked + " message(s) whose writes "
                + "were committed without a result are stored as failed with code " + CallbackRunner.ENDED_BY_CALLBACK
                + "; the others run again when redelivered." : "Nothing was stored.")
                + " Let the batch consumer end the transaction.");
    }

    private TransactionOutbox newOutbox(Claim claim) {
        return new TransactionOutbox(claim.tenant, executor.config().objectMapper(), executor.config().maxOutboxPayloadBytes(),
                executor.traces());
    }

    /**
     * Calls the handler for {@code call}'s messages (one tenant's) and, if it returns, stores the first
     * one's outcome with the call's events (inside its savepoint, where there is one, as the executor's
     * completion writes them) or adds it to {@code completed}, whose outcomes one statement stores, as
     * it adds the others; decides them applied. Returns whether the call published events.
     */
    private <M> boolean apply(Handle handle, Batch<M> batch, List<Claim> claimed, List<Claim> call, BatchHandler<M> handler,
                              TransactionOutbox outbox, List<Claim> completed) throws Exception {
        Claim first = call.get(0);
        List<M> messages = new ArrayList<>(call.size());
        for (Claim claim : call) {
            messages.add(batch.message(claim.index));
        }
        handler.handle(new CallbackTransaction(first.key, first.tenant, handle, outbox), messages);
        requireOpenTransaction(handle, batch, claimed, call);
        outbox.close();
        boolean published = outbox.size() > 0;
        if (published) {
            storeWithEvents(handle.getConnection(), first, outbox);
            first.rewrittenWithEvents = true;
        }
        for (Claim claim : call) {
            if ((claim != first || !published) && claim.storedCompletedRow == null) {
                completed.add(claim);
            }
            batch.decide(claim.index, Delivery.of(Delivery.Outcome.APPLIED));
        }
        return published;
    }

    /**
     * Stores the outcome of every message in {@code completed}, seals the claims where {@code sealed}
     * (checking that those stored completed, {@code storedCompleted}, are all there) and commits: the
     * last statement and our COMMIT in one round trip where the executor lets our COMMIT travel with a
     * statement ({@link PostgresIdempotentExecutor#commitsWithCompletion}), else Jdbi's commit after them.
     */
    private void completeAndCommit(Handle handle, List<Claim> completed, boolean sealed, List<Claim> storedCompleted) {
        if (sealed) {
            complete(handle.getConnection(), completed); // claimed processing: keys reclaimed from expired rows, rare
            commitAfter(handle, sql.sealBatchClaims, sql.sealBatchClaimsThenCommit, call -> bindSeal(call, storedCompleted));
        } else if (completed.isEmpty()) {
            handle.commit();
        } else {
            commitAfter(handle, sql.completeBatch, sql.completeBatchThenCommit, call -> bindCompletion(call, completed));
        }
    }

    /**
     * Runs {@code last} and commits: as {@code lastThenCommit}, the statement and our COMMIT in one round
     * trip, where the executor lets our COMMIT travel with a statement; else the statement, then Jdbi's commit.
     */
    private void commitAfter(Handle handle, JdbcStatement last, JdbcStatement lastThenCommit, JdbcStatement.Binding binding) {
        Connection connection = handle.getConnection();
        if (!executor.commitsWithCompletion()) {
            last.execute(connection, binding);
            handle.commit();
            return;
        }
        PgTransactions.commitWith(handle, () -> lastThenCommit.execute(connection, binding));
    }

    /**
     * The binds of {@link ExecutorSql}'s seal: the rows the claim stored completed, by their physical row, or
     * by key where storing their call's events rewrote them; how many must still be there.
     */
    private static JdbcStatement.Call bindSeal(JdbcStatement.Call call, List<Claim> storedCompleted) throws SQLException {
        List<Claim> rewritten = storedCompleted.stream().filter(claim -> claim.rewrittenWithEvents).toList();
        return bindKeys(call, rewritten)
                .textArray("rowIds", storedCompleted.stream().filter(claim -> !claim.rewrittenWithEvents)
                        .map(claim -> claim.storedCompletedRow).toList())
                .integer("expected", storedCompleted.size());
    }

    /** Stores the outcome of every message in {@code completed} in one statement. */
    private void complete(Connection connection, List<Claim> completed) {
        if (!completed.isEmpty()) {
            sql.completeBatch.execute(connection, call -> bindCompletion(call, completed));
        }
    }

    /** The binds of {@link ExecutorSql}'s batch completion: the keys, the applied result, how many rows it must update. */
    private JdbcStatement.Call bindCompletion(JdbcStatement.Call call, List<Claim> completed) throws SQLException {
        return bindKeys(call, completed).text("result", applied.json()).text("resultType", applied.typeName())
                .integer("expected", completed.size());
    }

    private void storeWithEvents(Connection connection, Claim claim, TransactionOutbox outbox) {
        sql.storeResult.of(outbox).execute(connection, call -> {
            call.text("tenant", claim.tenant).text("key", claim.key).text("result", applied.json())
                    .text("resultType", applied.typeName());
            outbox.bindEvents(call);
        });
    }

    /**
     * Takes the lowest free attempt slot of a failed message in the batch's transaction (it commits
     * with the batch, and not without it); returns its number, or {@code maxAttempts} when all are taken.
     */
    private int takeAttemptSlot(Connection connection, Claim claim) {
        for (int slot = 1; slot <= maxAttempts; slot++) {
            String key = ConsumerKeys.attemptKey(name, claim.messageId, slot);
            boolean taken = sql.takeAttemptSlot.queryFirst(connection, call -> call.text("tenant", claim.tenant)
                    .text("key", key).text("result", applied.json()).text("resultType", applied.typeName())
                    .number("retentionSeconds", retentionSeconds), row -> Boolean.TRUE).isPresent();
            if (taken) {
                return slot;
            }
        }
        return maxAttempts;
    }

    private static JdbcStatement.Call bindKeys(JdbcStatement.Call call, List<Claim> claims) throws SQLException {
        return call.textArray("tenants", claims.stream().map(claim -> claim.tenant).toList())
                .textArray("keys", claims.stream().map(claim -> claim.key).toList());
    }

    /** The decision for a claimed message whose transaction did not commit because of {@code e}. */
    private Delivery undone(RuntimeException e) {
        RuntimeException translated = DatabaseErrors.translate(e, name, "(batch)");
        return Delivery.failed(Delivery.Outcome.TRANSIENT_FAILURE, translated instanceof TransientFailureException
                ? translated
                : new TransientFailureException("The batch's transaction failed before its commit; nothing of it was "
                        + "committed. Redeliver its messages.", DatabaseErrors.sqlState(e), e));
    }

    private static void rollbackQuietly(Handle handle, RuntimeException cause) {
        try {
            if (!handle.isClosed() && handle.isInTransaction()) {
                handle.rollback();
            }
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    private void signalOutboxCommit() {
        try {
            executor.afterOutboxCommit().run();
        } catch (RuntimeException e) {
            log.warn("the after-outbox-commit listener failed; the relay will find the events by polling", e);
        }
    }

    /** A handler ended the batch's transaction itself: a bug in the handler, reported to the caller. */
    private static final class TransactionEndedByHandlerException extends IllegalStateException {
        TransactionEndedByHandlerException(String message) {
            super(message);
        }
    }

    /** A key of the batch's transaction. */
    private record Scope(String tenant, String key) {
    }

    /** What the claim's read found in a key row. */
    private record Stored(String status, String failure, boolean reclaimable) {
    }

    /** The first message of the batch with a key; later copies share its decision. */
    private static final class Claim {
        final int index;
        final String tenant;
        final String messageId;
        final String key;
        /**
         * The physical row (ctid) of its key row when its latest claim inserted it completed (to be sealed at
         * commit); null when it claimed it processing, or did not insert it.
         */
        String storedCompletedRow;
        /** Whether storing its call's events rewrote its key row after the claim (which moved it from {@link #storedCompletedRow}). */
        boolean rewrittenWithEvents;

        Claim(int index, String tenant, String messageId, String key) {
            this.index = index;
            this.tenant = tenant;
            this.messageId = messageId;
            this.key = key;
        }
    }

    /** The messages of one call and their decisions, in the caller's order. */
    private static final class Batch<M> {
        final List<M> messages;
        final Delivery[] decisions;
        /** The message whose claim a later copy shares, by index; -1 for the first of each key. */
        final int[] copyOf;
        final Map<Scope, Claim> claims = new LinkedHashMap<>();

        Batch(List<M> messages) {
            this.messages = messages;
            this.decisions = new Delivery[messages.size()];
            this.copyOf = new int[messages.size()];
            Arrays.fill(copyOf, -1);
        }

        M message(int index) {
            return messages.get(index);
        }

        void add(int index, String tenant, String messageId, String key) {
            Claim first = claims.putIfAbsent(new Scope(tenant, key), new Claim(index, tenant, messageId, key));
            if (first != null) {
                copyOf[index] = first.index;
            }
        }

        void decide(int index, Delivery delivery) {
            decisions[index] = delivery;
        }

        void undecide(List<Claim> some) {
            for (Claim claim : some) {
                decisions[claim.index] = null;
            }
        }

        void decideUndecided(List<Claim> some, Delivery delivery) {
            for (Claim claim : some) {
                if (decisions[claim.index] == null) {
                    decisions[claim.index] = delivery;
                }
            }
        }

        List<Result<M>> results() {
            List<Result<M>> results = new ArrayList<>(messages.size());
            for (int i = 0; i < messages.size(); i++) {
                Delivery delivery = decisions[i];
                if (copyOf[i] >= 0) {
                    Delivery first = decisions[copyOf[i]];
                    // A copy never runs: the first's effects are its own, committed or not.
                    delivery = first.outcome() == Delivery.Outcome.APPLIED ? Delivery.of(Delivery.Outcome.DUPLICATE) : first;
                }
                results.add(new Result<>(messages.get(i), delivery));
            }
            return results;
        }
    }

    /** Builds an {@link IdempotentBatchConsumer}; {@code maxAttempts} defaults to {@value IdempotentConsumer#DEFAULT_MAX_ATTEMPTS}. */
    public static final class Builder {
        private final PostgresIdempotentExecutor executor;
        private final String name;
        private int maxAttempts = IdempotentConsumer.DEFAULT_MAX_ATTEMPTS;
        private Tracing tracing = Tracing.auto();

        private Builder(PostgresIdempotentExecutor executor, String name) {
            this.executor = executor;
            this.name = name;
        }

        /** Failed attempts of one message after which it is dead-lettered; 1 to {@value IdempotentConsumer#MAX_MAX_ATTEMPTS}. */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * Whether and where calls make spans; default {@link Tracing#auto()}. With tracing on, each call
         * of {@code consume} is one CONSUMER span named {@code process}, as the one-message consumer's
         * but for the whole batch, as the messaging conventions have it for batches: a child of the
         * current span, linked to the context each message carries, with
         * {@code messaging.batch.message_count}, {@code idempotency.messages.<outcome>} counting the
         * messages of each outcome ({@code first_run}, {@code replay}, ... as the one-message consumer's
         * {@code idempotency.outcome}), that {@code idempotency.outcome} too when every message had the
         * same, and the error type of the first failed message when one had
         * {@code transient_failure} or {@code dead_letter}. The events handlers publish carry this
         * span's context. Message ids, tenants and payloads are never attributes.
         */
        public Builder tracing(Tracing tracing) {
            this.tracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /**
         * The consumer.
         *
         * @throws IllegalArgumentException the name is blank, too long, or holds a character other than
         *         ASCII letters, digits, {@code .}, {@code _} and {@code -}, or {@code maxAttempts} is out of range
         */
        public IdempotentBatchConsumer build() {
            ConsumerKeys.requireName(name);
            if (maxAttempts < 1 || maxAttempts > IdempotentConsumer.MAX_MAX_ATTEMPTS) {
                throw new IllegalArgumentException("maxAttempts must be between 1 and " + IdempotentConsumer.MAX_MAX_ATTEMPTS
                        + " (was " + maxAttempts + ")");
            }
            return new IdempotentBatchConsumer(executor, name, maxAttempts, Traces.of(tracing));
        }
    }
}

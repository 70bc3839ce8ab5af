package dev.idempotency.spring.boot;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.CompletionStep;
import dev.idempotency.core.ExternalStep;
import dev.idempotency.core.IdempotentCallback;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.jdbc.PostgresTransaction;
import java.util.Objects;

/**
 * The application's executor bean: the PostgreSQL executor, with each call's outcome told to a
 * listener (the meters). Semantics are the delegate's, unchanged.
 */
final class ObservedIdempotentExecutor implements IdempotentExecutor<PostgresTransaction> {
    private final IdempotentExecutor<PostgresTransaction> delegate;
    private final ExecutorOutcomeListener listener;

    ObservedIdempotentExecutor(IdempotentExecutor<PostgresTransaction> delegate, ExecutorOutcomeListener listener) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return observe(() -> delegate.run(key, tenant, callback));
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, Class<T> resultType,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return observe(() -> delegate.run(key, tenant, resultType, callback));
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return observe(() -> delegate.run(key, tenant, fingerprint, callback));
    }

    @Override
    public <T, X extends Exception> Outcome<T> run(String key, String tenant, RequestFingerprint fingerprint,
                                                   Class<T> resultType,
                                                   IdempotentCallback<PostgresTransaction, T, X> callback) throws X {
        return observe(() -> delegate.run(key, tenant, fingerprint, resultType, callback));
    }

    @Override
    public <S, T, X extends Exception> Outcome<T> runWithLease(LeaseRequest<T> request, ExternalStep<S, X> externalStep,
                                                               CompletionStep<PostgresTransaction, S, T, X> completion) throws X {
        return observe(() -> delegate.runWithLease(request, externalStep, completion));
    }

    private <T, X extends Exception> Outcome<T> observe(Call<T, X> call) throws X {
        Outcome<T> outcome;
        try {
            outcome = call.run();
        } catch (RuntimeException | Error e) {
            listener.ended(ExecutorOutcome.of(e), e instanceof BusinessFailure failure && failure.replayed());
            throw e;
        } catch (Exception e) {
            listener.ended(ExecutorOutcome.ERROR, false);
            throw e;
        }
        listener.ended(outcome.replayed() ? ExecutorOutcome.REPLAY : ExecutorOutcome.FIRST_RUN, outcome.replayed());
        return outcome;
    }

    @FunctionalInterface
    private interface Call<T, X extends Exception> {
        Outcome<T> run() throws X;
    }
}

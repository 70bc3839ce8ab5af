package dev.idempotency.spring.boot.web;

import dev.idempotency.core.outbox.OutboxWriter;
import dev.idempotency.jdbc.PostgresTransaction;
import java.util.Map;
import java.util.Optional;

/**
 * The idempotent call the current request runs in, for controllers: its key, its tenant and its
 * outbox. Inject it (a singleton bean reading the calling thread's call), or the {@link OutboxWriter}
 * bean the starter defines over it. Events published through it commit with the controller's writes,
 * the key and the stored response, or vanish with them.
 */
public final class IdempotentRequest implements OutboxWriter {
    private static final ThreadLocal<PostgresTransaction> CURRENT = new ThreadLocal<>();

    /** The key's transaction running on this thread, if any. */
    public Optional<PostgresTransaction> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    /** The key of the request being handled on this thread. */
    public String key() {
        return require().key();
    }

    /** The tenant of the request being handled on this thread. */
    public String tenant() {
        return require().tenant();
    }

    @Override
    public void publish(String topic, String partitionKey, Object payload, Map<String, String> headers) {
        require().outbox().publish(topic, partitionKey, payload, headers);
    }

    @Override
    public void publishJson(String topic, String partitionKey, String json, Map<String, String> headers) {
        require().outbox().publishJson(topic, partitionKey, json, headers);
    }

    private PostgresTransaction require() {
        PostgresTransaction tx = CURRENT.get();
        if (tx == null) {
            throw new IllegalStateException("No idempotent request is being handled on this thread: the outbox writer "
                    + "works only in a request that carries an Idempotency-Key on a path in idempotency.http.paths or a "
                    + "method annotated @IdempotentEndpoint.");
        }
        return tx;
    }

    static void bind(PostgresTransaction tx) {
        CURRENT.set(tx);
    }

    static void unbind() {
        CURRENT.remove();
    }
}

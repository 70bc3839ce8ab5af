package dev.idempotency.core.internal.tracing;

import dev.idempotency.core.outbox.OutboxEvent;
import java.util.List;

/** {@link Traces#none()}: reads no context and starts no span. */
enum NoTraces implements Traces {
    INSTANCE;

    @Override
    public W3cContext current() {
        return null;
    }

    @Override
    public TracedSpan startInternal(String name) {
        return TracedSpan.NONE;
    }

    @Override
    public TracedSpan startProcess(String consumer, W3cContext message) {
        return TracedSpan.NONE;
    }

    @Override
    public TracedSpan startBatchProcess(String consumer, List<W3cContext> messages) {
        return TracedSpan.NONE;
    }

    @Override
    public TracedSpan startSend(String system, List<OutboxEvent> events) {
        return TracedSpan.NONE;
    }
}

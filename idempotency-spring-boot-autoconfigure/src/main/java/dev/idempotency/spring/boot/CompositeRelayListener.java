package dev.idempotency.spring.boot;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxRelayListener;
import java.time.Duration;
import java.util.List;

/** Tells every {@link OutboxRelayListener} bean of the application (the meters among them) what the relay did. */
final class CompositeRelayListener implements OutboxRelayListener {
    private final List<OutboxRelayListener> listeners;

    private CompositeRelayListener(List<OutboxRelayListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    static OutboxRelayListener of(List<OutboxRelayListener> listeners) {
        return switch (listeners.size()) {
            case 0 -> OutboxRelayListener.NONE;
            case 1 -> listeners.get(0);
            default -> new CompositeRelayListener(listeners);
        };
    }

    @Override
    public void published(OutboxEvent event, Duration sinceCreated) {
        listeners.forEach(listener -> listener.published(event, sinceCreated));
    }

    @Override
    public void publishFailed(OutboxEvent event, String error) {
        listeners.forEach(listener -> listener.publishFailed(event, error));
    }

    @Override
    public void deadLettered(long eventId, String error) {
        listeners.forEach(listener -> listener.deadLettered(eventId, error));
    }
}

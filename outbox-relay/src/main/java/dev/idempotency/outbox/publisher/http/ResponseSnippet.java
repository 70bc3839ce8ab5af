package dev.idempotency.outbox.publisher.http;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscribers;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Flow;

/**
 * Keeps the first bytes of an error response's body for the event's error message and drops the
 * rest, so a receiver answering with a huge page cannot fill the relay's memory.
 */
final class ResponseSnippet implements Flow.Subscriber<List<ByteBuffer>> {
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private final int limit;

    private ResponseSnippet(int limit) {
        this.limit = limit;
    }

    /** A body handler that discards 2xx bodies and keeps up to {@code limit} bytes of any other. */
    static HttpResponse.BodyHandler<String> handler(int limit) {
        return info -> info.statusCode() / 100 == 2
                ? BodySubscribers.replacing("")
                : BodySubscribers.fromSubscriber(new ResponseSnippet(limit), ResponseSnippet::text);
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
        subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
        for (ByteBuffer buffer : buffers) {
            int take = Math.min(buffer.remaining(), limit - kept.size());
            for (int i = 0; i < take; i++) {
                kept.write(buffer.get());
            }
        }
    }

    @Override
    public void onError(Throwable failure) {
        // The status line already tells what happened; a cut-off body just stays shorter.
    }

    @Override
    public void onComplete() {
    }

    private String text() {
        return kept.toString(StandardCharsets.UTF_8).strip();
    }
}

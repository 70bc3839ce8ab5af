package dev.idempotency.benchmarks.sections;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Section 10's callers: one {@link HttpClient} (HTTP/1.1, a kept-alive connection per concurrent
 * caller) sending the payment POST. A call that does not get the expected 201, or a replay that
 * is not marked {@code Idempotent-Replayed: true} (a first run not marked false), throws.
 */
final class HttpPaymentClient {
    enum Kind { PLAIN, FRESH_KEY, REPLAY }

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final URI plain;
    private final URI keyed;
    private final Kind kind;
    /** REPLAY: one stored (key, amount) per caller thread, so replays do not queue on one key's row. */
    private final List<String[]> replayKeys = new ArrayList<>();
    private final AtomicInteger nextReplayKey = new AtomicInteger();
    private final ThreadLocal<String[]> replayKey;

    /** For REPLAY, stores {@code callers} keys first, outside the measured calls. */
    HttpPaymentClient(URI base, Kind kind, int callers) throws IOException, InterruptedException {
        this.plain = base.resolve(HttpPaymentServer.PLAIN_PATH);
        this.keyed = base.resolve(HttpPaymentServer.KEYED_PATH);
        this.kind = kind;
        if (kind == Kind.REPLAY) {
            for (int i = 0; i < callers; i++) {
                String[] stored = {"\"" + PaymentCalls.freshKey() + "\"", Long.toString(PaymentCalls.amount())};
                post(keyed, stored[0], stored[1], "false");
                replayKeys.add(stored);
            }
        }
        this.replayKey = ThreadLocal.withInitial(() -> replayKeys.get(nextReplayKey.getAndIncrement() % replayKeys.size()));
    }

    /** One measured request of this client's kind. */
    void call() throws IOException, InterruptedException {
        switch (kind) {
            case PLAIN -> post(plain, null, Long.toString(PaymentCalls.amount()), null);
            case FRESH_KEY -> post(keyed, "\"" + PaymentCalls.freshKey() + "\"", Long.toString(PaymentCalls.amount()), "false");
            case REPLAY -> post(keyed, replayKey.get()[0], replayKey.get()[1], "true");
        }
    }

    private void post(URI uri, String keyHeader, String amount, String expectReplayed) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(TIMEOUT)
                .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString(amount));
        if (keyHeader != null) {
            request.header("Idempotency-Key", keyHeader);
        }
        HttpResponse<Void> response = client.send(request.build(), HttpResponse.BodyHandlers.discarding());
        if (response.statusCode() != 201) {
            throw new IllegalStateException(uri.getPath() + " answered " + response.statusCode() + ", not 201");
        }
        if (expectReplayed != null && !expectReplayed.equals(response.headers().firstValue("Idempotent-Replayed").orElse(null))) {
            throw new IllegalStateException(uri.getPath() + " answered Idempotent-Replayed "
                    + response.headers().firstValue("Idempotent-Replayed").orElse("(none)") + ", expected " + expectReplayed);
        }
    }
}

package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a client of the starter's keyed endpoints sees, over a real server on a random port: the
 * DESIGN's HTTP table, with the controller's JdbcTemplate row and outbox event committing with the
 * key (Spring's transaction joined) or not at all.
 */
class KeyedRequestsTest {
    @RegisterExtension
    static final RunningApplication shop = RunningApplication.shop("--idempotency.http.stored-client-errors=402",
            "--idempotency.wait-budget=200ms", "--idempotency.http.retry-after=7s");

    static final String ORDER = "{\"item\":\"book\"}";

    static String key() {
        return UUID.randomUUID().toString();
    }

    int orders(String key) {
        return shop.count("SELECT count(*) FROM orders WHERE request_key = ?", key);
    }

    int events(String key) {
        return shop.count("SELECT count(*) FROM outbox_events e JOIN orders o ON (e.payload->>'orderId')::bigint = o.id "
                + "WHERE o.request_key = ?", key);
    }

    int keys(String key) {
        return shop.count("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = ?", key);
    }

    @Test
    void theFirstRequestCommitsItsRowEventAndKeyTogetherAndARetryGetsTheSameBytesMarkedReplayed() throws Exception {
        String key = key();
        HttpResponse<String> first = shop.post("/orders", ORDER, key);
        HttpResponse<String> retry = shop.post("/orders", ORDER, key);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).hasValue("false");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location")).isPresent();
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(orders(key)).isEqualTo(1);
        assertThat(events(key)).isEqualTo(1);
        assertThat(keys(key)).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherBodyIs422AndWritesNothing() throws Exception {
        String key = key();
        assertThat(shop.post("/orders", ORDER, key).statusCode()).isEqualTo(201);
        HttpResponse<String> reused = shop.post("/orders", "{\"item\":\"pen\"}", key);
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(reused.headers().firstValue("Cache-Control")).hasValue("no-store");
        assertThat(orders(key)).isEqualTo(1);
    }

    @Test
    void aControllerThatThrowsAfterWritingLeavesNoRowEventOrKeyAndTheRetryRuns() throws Exception {
        String key = key();
        HttpResponse<String> failed = shop.send(shop.request("/orders").header("Content-Type", "application/json")
                .header("Idempotency-Key", key).header("X-Fail-After-Write", "true")
                .POST(HttpRequest.BodyPublishers.ofString(ORDER)));
        assertThat(failed.statusCode()).isGreaterThanOrEqualTo(500);
        assertThat(orders(key)).isZero();
        assertThat(keys(key)).isZero();
        assertThat(shop.count("SELECT count(*) FROM outbox_events e WHERE NOT EXISTS "
                + "(SELECT 1 FROM orders o WHERE o.id = (e.payload->>'orderId')::bigint)")).isZero();

        HttpResponse<String> retry = shop.post("/orders", ORDER, key);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("false");
        assertThat(orders(key)).isEqualTo(1);
        assertThat(events(key)).isEqualTo(1);
    }

    @Test
    void aDeclaredBusinessFailureIsStoredAndReplayedAsItWas() throws Exception {
        String key = key();
        HttpResponse<String> declined = shop.post("/orders", "{\"item\":\"declined\"}", key);
        HttpResponse<String> replay = shop.post("/orders", "{\"item\":\"declined\"}", key);
        assertThat(declined.statusCode()).isEqualTo(402);
        assertThat(replay.statusCode()).isEqualTo(402);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(declined.body());
        assertThat(keys(key)).isEqualTo(1);
    }

    @Test
    void aDuplicateWhileTheFirstRunsPastTheWaitBudgetIs409WithTheConfiguredRetryAfter() throws Exception {
        String key = key();
        // Two at once: whichever arrives first runs for a second; the other waits 200 ms, then gets 409.
        List<CompletableFuture<HttpResponse<String>>> both = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            both.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return shop.post("/orders", "{\"item\":\"slow\"}", key);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        List<HttpResponse<String>> responses = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> response : both) {
            responses.add(response.get());
        }
        responses.sort(java.util.Comparator.comparingInt(HttpResponse::statusCode));
        assertThat(responses.get(0).statusCode()).isEqualTo(201);
        HttpResponse<String> conflict = responses.get(1);
        assertThat(conflict.statusCode()).isEqualTo(409);
        assertThat(conflict.headers().firstValue("Retry-After")).hasValue("7");
        assertThat(conflict.body()).contains("after 7 seconds");
        assertThat(orders(key)).isEqualTo(1);
    }

    @Test
    void otherMethodsPassThroughUntouched() throws Exception {
        HttpResponse<String> list = shop.send(shop.request("/orders").GET());
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    @Test
    void aPathPatternFromACustomizerNeedsAKeyAsThePropertiesPathsDo() throws Exception {
        assertThat(shop.post("/carts/7/checkout", "{}").statusCode()).isEqualTo(400);
        String key = key();
        HttpResponse<String> first = shop.post("/carts/7/checkout", "{}", key);
        HttpResponse<String> again = shop.post("/carts/7/checkout", "{}", key);
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    void anAnnotatedEndpointOutsideThePathsNeedsAKeyRunsOnceAndReplays() throws Exception {
        assertThat(shop.post("/refunds", "{\"order\":7}").statusCode()).isEqualTo(400);
        String key = key();
        HttpResponse<String> first = shop.post("/refunds", "{\"order\":7}", key);
        HttpResponse<String> again = shop.post("/refunds", "{\"order\":7}", key);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(keys(key)).isEqualTo(1);
    }
}

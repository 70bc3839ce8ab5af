package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every spelling of a keyed path gets the rules of its canonical spelling, over real HTTP: the
 * application runs under the context path {@code /shop}, and {@code POST /shop/orders} needs a key
 * ({@code idempotency.http.paths=/orders}). Path parameters, percent-encoding, empty and dot segments
 * and a trailing slash must neither skip the key check nor make the same operation another request.
 */
class PathSpellingsTest {
    @RegisterExtension
    static final RunningApplication shop = RunningApplication.shop("--server.servlet.context-path=/shop");

    static final String ORDER = "{\"item\":\"book\"}";

    static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    int orders() {
        return shop.count("SELECT count(*) FROM orders");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shop/orders", "/shop/orders;v=1", "/shop/orders;", "/shop/%6Frders", "/shop/%6frders;a=b",
            "/shop//orders", "/shop/./orders", "/shop/%2e/orders", "/shop/x/../orders", "/shop/x/%2E%2E/orders",
            "/shop/orders/", "/shop/orders//", "/shop;v=1/orders", "/%73hop/orders"})
    void everySpellingOfAKeyedPathNeedsAKeyAndRunsNothingWithoutOne(String target) throws Exception {
        int before = orders();
        HttpResponse<String> missing = shop.post(target, ORDER);
        assertThat(missing.statusCode()).as(target).isEqualTo(400);
        assertThat(missing.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(missing.body()).contains("idempotency-key-missing");
        assertThat(orders()).isEqualTo(before);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shop/orders;v=1", "/shop/orders;", "/shop/%6Frders", "/shop/%6frders;a=b", "/shop//orders",
            "/shop/./orders", "/shop/%2e/orders", "/shop/x/../orders", "/shop/x/%2E%2E/orders", "/shop/orders/",
            "/shop/orders//", "/shop;v=1/orders", "/%73hop/orders"})
    void everySpellingOfAKeyedPathIsTheSameRequestAsItsCanonicalSpelling(String target) throws Exception {
        String key = key();
        HttpResponse<String> first = shop.post("/shop/orders", ORDER, key);
        assertThat(first.statusCode()).isEqualTo(201);

        HttpResponse<String> again = shop.post(target, ORDER, key);
        assertThat(again.statusCode()).as(target).isEqualTo(201);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).as(target).hasValue("true");
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(shop.count("SELECT count(*) FROM orders WHERE request_key = ?", unquoted(key))).isEqualTo(1);

        HttpResponse<String> other = shop.post(target, "{\"item\":\"pen\"}", key);
        assertThat(other.statusCode()).as(target).isEqualTo(422);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shop/orders;v=1", "/shop/%6Frders", "/shop;v=1/orders", "/%73hop/orders"})
    void aSpellingTheRouterMapsToTheEndpointRunsItOnceAndTheCanonicalSpellingReplaysIt(String target) throws Exception {
        String key = key();
        HttpResponse<String> first = shop.post(target, ORDER, key);
        assertThat(first.statusCode()).as(target).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).hasValue("false");

        HttpResponse<String> canonical = shop.post("/shop/orders", ORDER, key);
        assertThat(canonical.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(canonical.body()).isEqualTo(first.body());
    }

    @ParameterizedTest
    @ValueSource(strings = {"/shop/refunds;v=1", "/shop/%72efunds", "/shop;v=1/refunds"})
    void anAnnotatedEndpointReachedByAnotherSpellingIsTheSameRequest(String target) throws Exception {
        assertThat(shop.post(target, "{\"order\":1}").statusCode()).as(target).isEqualTo(400);
        String key = key();
        HttpResponse<String> first = shop.post("/shop/refunds", "{\"order\":1}", key);
        HttpResponse<String> again = shop.post(target, "{\"order\":1}", key);
        assertThat(again.statusCode()).as(target).isEqualTo(200);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).as(target).hasValue("true");
        assertThat(again.body()).isEqualTo(first.body());
    }

    static String unquoted(String key) {
        return key.substring(1, key.length() - 1);
    }
}

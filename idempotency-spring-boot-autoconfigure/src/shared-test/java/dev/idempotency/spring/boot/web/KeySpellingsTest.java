package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Keys as clients send them, over real HTTP: by default the unquoted key of Stripe's SDKs and its
 * quoted Structured Field String form are the same key; lists, two field lines, spaces, over-long
 * and non-ASCII keys are 400 problems that say which forms are accepted; strict draft-07 parsing is a
 * property away.
 */
class KeySpellingsTest {
    @RegisterExtension
    static final RunningApplication shop = RunningApplication.shop();

    static final String ORDER = "{\"item\":\"book\"}";

    int orders(String key) {
        return shop.count("SELECT count(*) FROM orders WHERE request_key = ?", key);
    }

    @Test
    void anUnquotedKeyRunsTheHandlerAndItsQuotedFormReplaysIt() throws Exception {
        String key = UUID.randomUUID().toString();
        HttpResponse<String> unquoted = shop.post("/orders", ORDER, key);
        HttpResponse<String> quoted = shop.post("/orders", ORDER, "\"" + key + "\"");
        assertThat(unquoted.statusCode()).isEqualTo(201);
        assertThat(unquoted.body()).contains("\"key\":\"" + key + "\"");
        assertThat(quoted.statusCode()).isEqualTo(201);
        assertThat(quoted.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(quoted.body()).isEqualTo(unquoted.body());
        assertThat(orders(key)).isEqualTo(1);
    }

    @Test
    void aQuotedKeyRunsTheHandlerAndItsUnquotedFormReplaysIt() throws Exception {
        String key = UUID.randomUUID().toString();
        HttpResponse<String> quoted = shop.post("/orders", ORDER, "\"" + key + "\"");
        HttpResponse<String> unquoted = shop.post("/orders", ORDER, key);
        assertThat(unquoted.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(unquoted.body()).isEqualTo(quoted.body());
        assertThat(orders(key)).isEqualTo(1);
    }

    @Test
    void listsTwoFieldLinesSpacesOverLongAndNonAsciiKeysAre400ProblemsNamingTheAcceptedForms() throws Exception {
        int before = shop.count("SELECT count(*) FROM orders");
        List<String[]> refused = List.of(new String[] {"a, b"}, new String[] {"\"a\", \"b\""}, new String[] {"a", "a"},
                new String[] {"two words"}, new String[] {"k".repeat(256)}, new String[] {"\"\""});
        for (String[] lines : refused) {
            HttpResponse<String> response = shop.post("/orders", ORDER, lines);
            assertThat(response.statusCode()).as(String.join(" | ", lines)).isEqualTo(400);
            assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(response.body()).contains("idempotency-key-malformed")
                    .contains("either unquoted (Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324")
                    .contains("quoted Structured Field String");
        }
        // Sent as bytes: java.net.http would not put them on the wire as they are.
        for (String key : List.of("caf\u00e9", "\"caf\u00e9\"", "a\u0001b", "\"a\u0001b\"")) {
            assertThat(shop.postRawKey("/orders", ORDER, key.getBytes(StandardCharsets.UTF_8))).as(key)
                    .startsWith("HTTP/1.1 400");
        }
        assertThat(shop.count("SELECT count(*) FROM orders")).isEqualTo(before);
    }

    @Test
    void strictKeySyntaxRefusesTheUnquotedKeyAndSaysOnlyTheQuotedFormIsAccepted() throws Exception {
        try (RunningApplication strict = shop.another("--idempotency.http.key-syntax=strict")) {
            String key = UUID.randomUUID().toString();
            HttpResponse<String> unquoted = strict.post("/orders", ORDER, key);
            assertThat(unquoted.statusCode()).isEqualTo(400);
            assertThat(unquoted.body()).contains("quoted Structured Field String (RFC 8941) only");
            assertThat(strict.post("/orders", ORDER, "\"" + key + "\"").statusCode()).isEqualTo(201);
            assertThat(orders(key)).isEqualTo(1);
        }
    }
}

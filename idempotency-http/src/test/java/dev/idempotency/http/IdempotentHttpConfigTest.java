package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotentHttpConfigTest {

    @Test
    void byDefaultPostAndPatchNeedAKeyAndTheOtherMethodsPassThrough() {
        IdempotentHttpConfig config = IdempotentHttpConfig.defaults();
        assertEquals("Idempotency-Key", config.headerName());
        assertTrue(config.requiresKey("POST", "/anything"));
        assertTrue(config.requiresKey("PATCH", "/"));
        for (String method : new String[] {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "post"}) {
            assertFalse(config.requiresKey(method, "/payments"), method);
        }
        assertEquals(Set.of(), config.storedClientErrors());
        assertEquals(255, config.maxKeyLength());
        assertEquals(KeySyntax.LENIENT, config.keySyntax());
        assertEquals(32 * 1024, config.maxStoredBodyBytes());
        assertFalse(config.replayedHeaders().contains("set-cookie"));
    }

    @Test
    void pathRulesLimitTheKeyToMatchingPathsByWholeSegments() {
        IdempotentHttpConfig config = IdempotentHttpConfig.builder().pathPrefixes("/payments")
                .pathPatterns(Pattern.compile("/accounts/[^/]+/transfers")).build();
        assertTrue(config.requiresKey("POST", "/payments"));
        assertTrue(config.requiresKey("POST", "/payments/42/capture"));
        assertFalse(config.requiresKey("POST", "/paymentsx"));
        assertTrue(config.requiresKey("POST", "/accounts/7/transfers"));
        assertFalse(config.requiresKey("POST", "/accounts/7/transfers/1"));
        assertFalse(config.requiresKey("POST", "/orders"));
        assertFalse(config.requiresKey("GET", "/payments"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"Set-Cookie", "set-cookie", "SET-COOKIE2", "Content-Length", "Transfer-Encoding", "Connection",
            "Idempotent-Replayed"})
    void setCookieAndFramingHeadersAreRefusedEvenIfListed(String header) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> IdempotentHttpConfig.builder().replayedHeaders("Location", header).build());
        assertTrue(e.getMessage().contains("must not contain"), e.getMessage());
    }

    @Test
    void transientStatusesCannotBeDeclaredBusinessFailures() {
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().storedClientErrors(429).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().storedClientErrors(408).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().storedClientErrors(500).build());
        assertEquals(Set.of(402, 409), IdempotentHttpConfig.builder().storedClientErrors(402, 409).build().storedClientErrors());
    }

    @Test
    void badSettingsFailAtBuild() {
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().headerName("Idempotency Key").build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().methods().build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().pathPrefixes("payments").build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().maxKeyLength(256).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().maxKeyLength(0).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().maxStoredBodyBytes(-1).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().retryAfter(Duration.ofMillis(1500)).build());
        assertThrows(IllegalArgumentException.class, () -> IdempotentHttpConfig.builder().problemTypeBase("problems/").build());
        assertThrows(NullPointerException.class, () -> IdempotentHttpConfig.builder().keySyntax(null));
    }
}

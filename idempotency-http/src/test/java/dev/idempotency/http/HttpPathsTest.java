package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HttpPathsTest {

    @ParameterizedTest
    @ValueSource(strings = {"/orders", "/orders;v=1", "/orders;", "/%6Frders", "/%6frders;a=b", "//orders", "/./orders",
            "/%2e/orders", "/x/../orders", "/x/%2E%2E/orders", "/orders/", "/orders//", "/orders/.", "/../orders",
            "/x;p=1/..;q=2/orders"})
    void everySpellingOfAPathHasTheSameCanonicalPath(String raw) {
        assertEquals("/orders", HttpPaths.canonical(raw));
    }

    @Test
    void segmentsKeepTheirDecodedCharactersAndTheRootIsASlash() {
        assertEquals("/caf\u00e9/a b/c+d", HttpPaths.canonical("/caf%C3%A9/a%20b/c+d"));
        assertEquals("/", HttpPaths.canonical(""));
        assertEquals("/", HttpPaths.canonical("/"));
        assertEquals("/", HttpPaths.canonical("/x/.."));
        assertEquals("/payments/42/capture", HttpPaths.canonical("/payments/42/capture"));
    }

    @Test
    void decodedSegmentsFromARouterAreJoinedTheSameWay() {
        assertEquals("/orders", HttpPaths.canonical(List.of("", "x", "..", "", ".", "orders", "")));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/orders%", "/orders%2", "/orders%zz", "/%C3", "/%FF"})
    void aMalformedEncodingIsRefused(String raw) {
        assertThrows(IllegalArgumentException.class, () -> HttpPaths.canonical(raw));
    }
}

package dev.idempotency.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RequestFingerprintTest {
    record Charge(String card, long cents) {
    }

    @Test
    void theSameRequestInAnotherKeyOrderHasTheSameFingerprint() {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("card", "4242");
        a.put("cents", 100);
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("cents", 100);
        b.put("card", "4242");

        assertEquals(RequestFingerprint.ofJson(a), RequestFingerprint.ofJson(b));
        assertEquals(RequestFingerprint.ofJson(new Charge("4242", 100)), RequestFingerprint.ofJson(a));
    }

    @Test
    void aDifferentRequestHasADifferentFingerprint() {
        assertNotEquals(RequestFingerprint.ofJson(new Charge("4242", 100)), RequestFingerprint.ofJson(new Charge("4242", 101)));
        assertNotEquals(RequestFingerprint.ofString("a"), RequestFingerprint.ofString("b"));
    }

    @Test
    void aStoredDigestRoundTrips() {
        RequestFingerprint original = RequestFingerprint.ofString("body");

        assertEquals(original, RequestFingerprint.fromDigest(original.digest()));
        assertEquals(32, original.digest().length);
    }
}

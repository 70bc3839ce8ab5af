package dev.idempotency.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class BusinessFailureTest {
    @Test
    void aReplayedFailureIsABusinessFailureMarkedReplayedWithTheStoredCodeMessageAndDetails() {
        BusinessFailure replayed = BusinessFailure.replayed("card_declined", "The card was declined", Map.of("k", "v"));

        assertEquals(BusinessFailure.class, replayed.getClass());
        assertTrue(replayed.replayed());
        assertEquals("card_declined", replayed.code());
        assertEquals(Map.of("k", "v"), replayed.details());
        assertEquals("dev.idempotency.core.BusinessFailure: The card was declined", replayed.toString());
    }

    @Test
    void aFailureACallbackThrowsIsNotReplayed() {
        assertFalse(new BusinessFailure("card_declined", "The card was declined").replayed());
    }
}

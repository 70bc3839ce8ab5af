package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How a row of the outbox becomes the event a publisher sends, or an event held back with the reason it cannot be sent. */
class EventRowTest {

    private static ClaimedEvent decodedWithHeaders(String headers) {
        EventRow row = new EventRow(7, "msg-7", "t1", "payments", "order-1", "{\"amount\": 5}", headers,
                OffsetDateTime.of(2026, 12, 7, 12, 0, 0, 0, ZoneOffset.UTC), 0, 3, 12, false, null, null);
        return row.decode(1, 0);
    }

    @Test
    void anEventWithoutHeadersIsSentWithNone() {
        ClaimedEvent event = decodedWithHeaders("{}");

        assertNull(event.decodeError());
        assertEquals(Map.of(), event.event().headers());
        assertEquals("msg-7", event.event().messageId());
        assertEquals(1, event.event().attempt());
    }

    @Test
    void stringHeadersAreSentAsStored() {
        ClaimedEvent event = decodedWithHeaders("{\"source\": \"checkout\", \"schema\": \"v2\"}");

        assertNull(event.decodeError());
        assertEquals(Map.of("source", "checkout", "schema", "v2"), event.event().headers());
    }

    @Test
    void headersThatAreNotAnObjectOfStringsMakeTheEventUndecodableWithTheReason() {
        ClaimedEvent notAString = decodedWithHeaders("{\"retries\": 3}");
        ClaimedEvent notAnObject = decodedWithHeaders("[\"checkout\"]");

        assertNull(notAString.event());
        assertTrue(notAString.decodeError().contains("header 'retries' is number, not a string"), notAString.decodeError());
        assertNull(notAnObject.event());
        assertTrue(notAnObject.decodeError().contains("headers are not a JSON object"), notAnObject.decodeError());
    }
}

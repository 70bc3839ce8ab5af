package dev.idempotency.core.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The message id every publisher puts in a header field: 1 to 128 printable ASCII characters, no spaces. */
class OutboxEventTest {

    private static OutboxEvent withMessageId(String messageId) {
        return new OutboxEvent(1, messageId, "t1", "payments", "order-1", "{}", Map.of(), Instant.EPOCH, 1);
    }

    @Test
    void aMessageIdOfPrintableAsciiUpToTheLimitIsAccepted() {
        String longest = "a".repeat(OutboxEvent.MAX_MESSAGE_ID_LENGTH);

        assertEquals(longest, withMessageId(longest).messageId());
        assertEquals("!~order-1:42", withMessageId("!~order-1:42").messageId());
    }

    @Test
    void aMessageIdThatIsEmptyTooLongOrNotPrintableAsciiIsRefused() {
        for (String refused : new String[] {"", "a".repeat(OutboxEvent.MAX_MESSAGE_ID_LENGTH + 1), "order 1", "order-\u00e9",
                "order-1\n", "\u007f"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> withMessageId(refused), refused);
            assertEquals("messageId must be 1 to 128 printable ASCII characters without spaces", e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> withMessageId(null));
    }
}

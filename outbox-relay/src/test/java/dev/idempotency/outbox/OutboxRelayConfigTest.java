package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class OutboxRelayConfigTest {

    private static String rejection(UnaryOperator<OutboxRelayConfig.Builder> change) {
        return assertThrows(IllegalArgumentException.class, () -> change.apply(OutboxRelayConfig.builder()).build())
                .getMessage();
    }

    @Test
    void defaultsAreValidAndEachRelayGetsItsOwnInstanceId() {
        OutboxRelayConfig a = OutboxRelayConfig.builder().build();
        OutboxRelayConfig b = OutboxRelayConfig.builder().build();

        assertEquals("idempotency", a.schema());
        assertEquals(32, a.partitions());
        assertEquals(Duration.ofSeconds(30), a.leaseDuration());
        assertEquals(Duration.ofSeconds(3), a.leaseSafetyMargin());
        assertFalse(a.readAhead(), "each page is read after the one before it settled, unless read-ahead is turned on");
        assertNotEquals(a.instanceId(), b.instanceId());
    }

    @Test
    void readAheadCanBeTurnedOnAndStaysOnWithThePublishersOwnTimeLimit() {
        OutboxRelayConfig on = OutboxRelayConfig.builder().readAhead(true).build();

        assertTrue(on.readAhead());
        assertTrue(on.withPublishTimeout(Duration.ofSeconds(5)).readAhead());
        assertTrue(on.toString().contains("readAhead=true"), on.toString());
    }

    @Test
    void refusesSchemaNamesThatAreNotPlainIdentifiers() {
        assertTrue(rejection(b -> b.schema("x\"; DROP TABLE y; --")).startsWith("schema must be"));
        assertTrue(rejection(b -> b.schema("Upper")).startsWith("schema must be"));
        assertTrue(rejection(b -> b.schema(null)).startsWith("schema must be"));
    }

    @Test
    void namesTheSettingThatIsOutOfBounds() {
        assertTrue(rejection(b -> b.instanceId(" ")).startsWith("instanceId must be"));
        assertTrue(rejection(b -> b.instanceId("a\nb")).startsWith("instanceId must be"));
        assertTrue(rejection(b -> b.partitions(0)).startsWith("partitions must be between 1 and 4096"));
        assertTrue(rejection(b -> b.batchSize(0)).startsWith("batchSize must be"));
        assertTrue(rejection(b -> b.batchSize(5).maxEventsPerKey(6)).startsWith("maxEventsPerKey must be between 1 and 5"));
        assertTrue(rejection(b -> b.maxAttempts(0)).startsWith("maxAttempts must be"));
        assertTrue(rejection(b -> b.leaseDuration(Duration.ofMillis(500))).startsWith("leaseDuration must be"));
        assertTrue(rejection(b -> b.idlePollMin(Duration.ofSeconds(2)).idlePollMax(Duration.ofSeconds(1)))
                .startsWith("idlePollMax must be"));
        assertTrue(rejection(b -> b.linger(Duration.ofMillis(-1))).startsWith("linger must be between PT0S and PT1S"));
        assertTrue(rejection(b -> b.linger(Duration.ofSeconds(2))).startsWith("linger must be"));
        assertTrue(rejection(b -> b.positionWriteInterval(Duration.ofMillis(-1)))
                .startsWith("positionWriteInterval must be between PT0S and PT10S"));
        assertTrue(rejection(b -> b.leaseDuration(Duration.ofSeconds(5)).renewalInterval(Duration.ofSeconds(1))
                .publishTimeout(Duration.ofSeconds(1)).positionWriteInterval(Duration.ofSeconds(5)))
                .startsWith("positionWriteInterval (PT5S) must be shorter than leaseDuration (PT5S)"));
        assertTrue(rejection(b -> b.backoffBase(Duration.ofMinutes(10)).backoffMax(Duration.ofMinutes(5)))
                .startsWith("backoffMax must be"));
        assertEquals("publishTimeout", assertThrows(NullPointerException.class,
                () -> OutboxRelayConfig.builder().publishTimeout(null).build()).getMessage());
    }

    @Test
    void refusesALeaseThatAPublishCallCouldOutlast() {
        String message = rejection(b -> b.leaseDuration(Duration.ofSeconds(10))
                .renewalInterval(Duration.ofSeconds(2)).publishTimeout(Duration.ofSeconds(8)));
        assertTrue(message.startsWith("leaseDuration (PT10S) must be at least renewalInterval (PT2S) + publishTimeout (PT8S)"),
                message);
    }
}

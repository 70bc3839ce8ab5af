package dev.idempotency.outbox.publisher.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class SettingChecksTest {
    @Test
    void everyRefusalNamesTheSettingAndTheValueInOneStyle() {
        assertEquals("host must not be blank", refusal(() -> SettingChecks.requireText("host", " ")));
        assertEquals("password must not be null", refusal(() -> SettingChecks.requirePresent("password", null)));
        assertEquals("port must be between 1 and 65535 (was 0)", refusal(() -> SettingChecks.requirePort("port", 0)));
        assertEquals("slots must be between 1 and 16 (was 17)", refusal(() -> SettingChecks.requireBetween("slots", 17, 1, 16)));
        assertEquals("requestTimeout must be a positive duration (was PT-1S)",
                refusal(() -> SettingChecks.requirePositive("requestTimeout", Duration.ofSeconds(-1))));
        assertEquals("ackTimeout must be between 1ms and 2147483647ms (was PT0S)",
                refusal(() -> SettingChecks.requireMillis("ackTimeout", Duration.ZERO)));
        assertEquals("publishTimeout must be between 1000ms and 300000ms (was null)",
                refusal(() -> SettingChecks.requireBetween("publishTimeout", null, Duration.ofSeconds(1), Duration.ofMinutes(5))));
        assertEquals("bootstrapServers must be host:port (was 'kafka:99999')",
                refusal(() -> SettingChecks.requireHostPort("bootstrapServers", "kafka:99999")));
        assertEquals("bootstrapServers must be host:port (was ':9092')",
                refusal(() -> SettingChecks.requireHostPort("bootstrapServers", ":9092")));
    }

    @Test
    void acceptedValuesAreReturnedAsGiven() {
        assertEquals("[::1]:9092", SettingChecks.requireHostPort("bootstrapServers", " [::1]:9092 "));
        assertEquals(5672, SettingChecks.requirePort("port", 5672));
        assertEquals(Duration.ofMillis(1), SettingChecks.requireMillis("t", Duration.ofMillis(1)));
    }

    private static String refusal(Executable check) {
        return assertThrows(IllegalArgumentException.class, check).getMessage();
    }
}

package dev.idempotency.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class IdempotencyConfigTest {

    @Test
    void defaultsAreADayOfRetentionAFiveSecondWaitAndTheIdempotencySchema() {
        IdempotencyConfig config = IdempotencyConfig.defaults();

        assertEquals("idempotency", config.schema());
        assertEquals(Duration.ofHours(24), config.retention());
        assertEquals(Duration.ofSeconds(5), config.waitBudget());
        assertEquals(64 * 1024, config.maxResultBytes());
    }

    @Test
    void theLongestLeaseIsHalfTheRetention() {
        assertEquals(Duration.ofHours(12), IdempotencyConfig.defaults().maxLease());
        assertEquals(Duration.ofMillis(500), IdempotencyConfig.builder().retention(Duration.ofSeconds(1)).build().maxLease());
    }

    @Test
    void invalidSettingsFailAtBuildNamingTheSetting() {
        assertMessageStarts("schema", IdempotencyConfig.builder().schema("Public; DROP TABLE x"));
        assertMessageStarts("schema", IdempotencyConfig.builder().schema("\"quoted\""));
        assertMessageStarts("retention", IdempotencyConfig.builder().retention(Duration.ofMillis(10)));
        assertMessageStarts("waitBudget", IdempotencyConfig.builder().waitBudget(Duration.ofSeconds(-1)));
        assertMessageStarts("maxResultBytes", IdempotencyConfig.builder().maxResultBytes(0));
        assertMessageStarts("maxOutboxPayloadBytes", IdempotencyConfig.builder().maxOutboxPayloadBytes(Integer.MAX_VALUE));
    }

    @Test
    void theMapperIsCopiedSoLaterChangesToTheOriginalDoNotLeakIn() {
        var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
        IdempotencyConfig config = IdempotencyConfig.builder().objectMapper(mapper).build();

        mapper.enable(com.fasterxml.jackson.databind.SerializationFeature.WRAP_ROOT_VALUE);

        assertTrue(!config.objectMapper().isEnabled(com.fasterxml.jackson.databind.SerializationFeature.WRAP_ROOT_VALUE));
    }

    private static void assertMessageStarts(String setting, IdempotencyConfig.Builder builder) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
        assertTrue(e.getMessage().startsWith(setting + " "), e.getMessage());
    }
}

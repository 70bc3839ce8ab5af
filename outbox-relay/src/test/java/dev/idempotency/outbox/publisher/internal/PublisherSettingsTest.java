package dev.idempotency.outbox.publisher.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class PublisherSettingsTest {

    @Test
    void readsDurationsInShortAndIsoForm() {
        PublisherSettings settings = PublisherSettings.of("test", Map.of(
                "a", "500ms", "b", "10s", "c", "2m", "d", "1h", "e", "PT1.5S"));

        assertEquals(Optional.of(Duration.ofMillis(500)), settings.duration("a"));
        assertEquals(Optional.of(Duration.ofSeconds(10)), settings.duration("b"));
        assertEquals(Optional.of(Duration.ofMinutes(2)), settings.duration("c"));
        assertEquals(Optional.of(Duration.ofHours(1)), settings.duration("d"));
        assertEquals(Optional.of(Duration.ofMillis(1500)), settings.duration("e"));
    }

    @Test
    void aBlankValueCountsAsAbsent() {
        PublisherSettings settings = PublisherSettings.of("test", Map.of("timeout", "  "));

        assertEquals(Optional.empty(), settings.duration("timeout"));
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> settings.required("timeout"));
        assertEquals("test publisher setting 'timeout' is required", error.getMessage());
    }

    @Test
    void aMalformedValueIsRefusedWithTheSettingNamed() {
        PublisherSettings settings = PublisherSettings.of("test", Map.of("t", "10 seconds", "n", "ten", "b", "yes"));

        assertEquals("test publisher setting 't' must be a duration such as 500ms, 10s, 2m or PT10S (was '10 seconds')",
                assertThrows(IllegalArgumentException.class, () -> settings.duration("t")).getMessage());
        assertEquals("test publisher setting 'n' must be a whole number (was 'ten')",
                assertThrows(IllegalArgumentException.class, () -> settings.integer("n")).getMessage());
        assertEquals("test publisher setting 'b' must be true or false (was 'yes')",
                assertThrows(IllegalArgumentException.class, () -> settings.bool("b")).getMessage());
    }

    @Test
    void unknownNamesAreRefusedButPrefixedOnesPass() {
        PublisherSettings settings = PublisherSettings.of("test", Map.of("url", "x", "header.Authorization", "y"));
        settings.allowOnly(Set.of("url"), "header.");
        assertEquals(Map.of("Authorization", "y"), settings.withPrefix("header."));

        IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
                () -> PublisherSettings.of("test", Map.of("ulr", "x")).allowOnly(Set.of("url"), "header."));
        assertEquals("unknown test publisher setting 'ulr'; known settings: header.<name>, url", error.getMessage());
    }
}

package dev.idempotency.console;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class OverviewPageTest {
    @Test
    void eachRelaysPartitionsAreShownAsRanges() {
        assertEquals("0–7, 9, 12–13", OverviewPage.ranges(List.of(0, 1, 2, 3, 4, 5, 6, 7, 9, 12, 13)));
        assertEquals("5", OverviewPage.ranges(List.of(5)));
        assertEquals("", OverviewPage.ranges(List.of()));
    }
}

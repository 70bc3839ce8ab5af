package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class ConsumedSnapshotsTest {

    @Test
    void boundsAreTheLowestXmaxAndTheInProgressTxidsBelowIt() {
        ConsumedSnapshots bounds = ConsumedSnapshots.of(new String[] {
                "100:120:100,105,118", null, "90:110:90,95", "110:130:"});
        assertEquals("110", bounds.xmax());
        // 118 is at or above the lowest xmax: the range scan finds it.
        assertEquals(List.of("90", "95", "100", "105"), bounds.xip());
    }

    @Test
    void aNeverConsumedPartitionReadsFromTheStart() {
        ConsumedSnapshots bounds = ConsumedSnapshots.of(new String[] {"1:1:", "500:510:505"});
        assertEquals("1", bounds.xmax());
        assertEquals(List.of(), bounds.xip());
    }

    @Test
    void somethingThatIsNotASnapshotIsRefused() {
        assertThrows(IllegalStateException.class, () -> ConsumedSnapshots.of(new String[] {"100:120"}));
        assertThrows(IllegalArgumentException.class, () -> ConsumedSnapshots.of(new String[] {null}));
    }
}

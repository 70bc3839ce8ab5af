package dev.idempotency.benchmarks.sections;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The order of section 9's slices: each pair has one slice with the relay, first in every other pair. */
class RelayOnOffSlicesTest {

    @Test
    void slicesRunOffThenOnThenOnThenOffSoEachPairHasTheRelayOnceAndEachPlaceInTurn() {
        List<Boolean> order = IntStream.range(0, 8).mapToObj(RelayOnOffSlices::withRelay).toList();

        assertEquals(List.of(false, true, true, false, false, true, true, false), order);
    }
}

package dev.idempotency.benchmarks.harness;

import java.util.Optional;

/**
 * What this JVM spends over a window a section times itself (not through {@link ClosedLoopLoad}):
 * opened at the window's start, read at its end as a {@link ClientCost} per operation.
 */
public final class ClientWindow {
    private final long cpuAtStart;
    private final Optional<ClientProcess.Reading> processAtStart;

    private ClientWindow(long cpuAtStart, Optional<ClientProcess.Reading> processAtStart) {
        this.cpuAtStart = cpuAtStart;
        this.processAtStart = processAtStart;
    }

    /** A window starting now. */
    public static ClientWindow start() {
        return new ClientWindow(ClosedLoopLoad.processCpuNanos(), ClientProcess.ofThisProcess());
    }

    /** What the process spent since {@link #start()}, per operation of {@code operations}. */
    public ClientCost perOperation(long operations) {
        return ClientProcess.costPerOperation(ClosedLoopLoad.processCpuNanos() - cpuAtStart, processAtStart,
                ClientProcess.ofThisProcess(), operations);
    }
}

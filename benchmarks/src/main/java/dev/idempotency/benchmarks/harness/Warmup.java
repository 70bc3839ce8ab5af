package dev.idempotency.benchmarks.harness;

import java.time.Duration;

/**
 * A cell's warm-up: at least {@code least}, then, for a closed-loop Java cell, on until the JIT
 * compiler is quiet ({@link JitCompiler#awaitQuiet}), at most {@code jitQuietWithin} longer.
 */
public record Warmup(Duration least, Duration jitQuietWithin) {
}

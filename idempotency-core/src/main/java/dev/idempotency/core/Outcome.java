package dev.idempotency.core;

import java.util.Objects;

/**
 * The result of {@link IdempotentExecutor#run}: the callback's result, and whether it was replayed
 * from storage rather than produced by this call. An HTTP layer sets {@code Idempotent-Replayed: true}
 * when {@link #replayed()} is true.
 *
 * @param <T> the result type
 */
public final class Outcome<T> {
    private final T result;
    private final boolean replayed;

    private Outcome(T result, boolean replayed) {
        this.result = result;
        this.replayed = replayed;
    }

    /** An outcome produced by running the callback in this call. */
    public static <T> Outcome<T> firstRun(T result) {
        return new Outcome<>(result, false);
    }

    /** An outcome read back from storage; the callback did not run. */
    public static <T> Outcome<T> replay(T result) {
        return new Outcome<>(result, true);
    }

    /** The callback's result, never null (a callback returning null fails before commit). */
    public T result() {
        return result;
    }

    /** True when the result was stored by an earlier call and this call did not run the callback. */
    public boolean replayed() {
        return replayed;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Outcome<?> other && replayed == other.replayed && Objects.equals(result, other.result);
    }

    @Override
    public int hashCode() {
        return Objects.hash(result, replayed);
    }

    @Override
    public String toString() {
        return "Outcome[replayed=" + replayed + ", result=" + result + "]";
    }
}

package dev.idempotency.core.internal;

import dev.idempotency.core.BusinessFailure;
import java.util.Map;

/**
 * A {@link BusinessFailure} as read back from storage for a later call with the same key: its
 * {@link #replayed()} is true. Not API: catch {@link BusinessFailure} and ask {@code replayed()}.
 */
public final class ReplayedFailure extends BusinessFailure {
    /** The stored failure's code, message and details. */
    public ReplayedFailure(String code, String message, Map<String, String> details) {
        super(code, message, details);
    }

    @Override
    public boolean replayed() {
        return true;
    }
}

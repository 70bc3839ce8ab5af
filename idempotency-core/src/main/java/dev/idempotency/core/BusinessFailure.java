package dev.idempotency.core;

import java.util.Map;
import java.util.Objects;

/**
 * A deterministic business outcome that is a failure (a declined card, an unknown account): thrown
 * by a callback, it is stored for the key and thrown again, {@linkplain #replayed() marked as
 * replayed}, to every later caller. The callback's business writes and outbox events are rolled
 * back; the key keeps the failure. Throw any other exception for failures a retry may fix.
 *
 * <p>It is the application's outcome, not the library's failure, so it is deliberately not an
 * {@link IdempotencyException}: a {@code catch (IdempotencyException e)} that maps the library's
 * failures to 409/422/503 never swallows a declined card.
 */
public class BusinessFailure extends RuntimeException {
    /** Upper bound on {@link #code()} so a stored failure stays small. */
    public static final int MAX_CODE_LENGTH = 100;

    private final String code;
    private final Map<String, String> details;
    private final boolean replayed;

    /** A failure with a machine-readable {@code code} (e.g. {@code card_declined}) and a message for people. */
    public BusinessFailure(String code, String message) {
        this(code, message, Map.of());
    }

    /** As {@link #BusinessFailure(String, String)}, with string details (e.g. {@code decline_code}). */
    public BusinessFailure(String code, String message, Map<String, String> details) {
        this(code, message, details, false);
    }

    private BusinessFailure(String code, String message, Map<String, String> details, boolean replayed) {
        super(Objects.requireNonNull(message, "message"));
        Objects.requireNonNull(code, "code");
        if (code.isBlank() || code.length() > MAX_CODE_LENGTH) {
            throw new IllegalArgumentException("code must be non-blank and at most " + MAX_CODE_LENGTH + " characters");
        }
        this.code = code;
        this.details = Map.copyOf(Objects.requireNonNull(details, "details"));
        this.replayed = replayed;
    }

    /**
     * The failure stored for a key, as a later call with the key gets it: {@link #replayed()} is true.
     * For an executor that reads a stored failure back; a callback throws one it constructs.
     */
    public static BusinessFailure replayed(String code, String message, Map<String, String> details) {
        return new BusinessFailure(code, message, details, true);
    }

    /** The machine-readable failure code. */
    public String code() {
        return code;
    }

    /** Details stored with the failure; empty if none. */
    public Map<String, String> details() {
        return details;
    }

    /** True when this failure was stored by an earlier call and this call did not run the callback. */
    public boolean replayed() {
        return replayed;
    }
}

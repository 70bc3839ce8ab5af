package dev.idempotency.core;

import dev.idempotency.core.internal.Labels;

/**
 * The rules every key, tenant and other stored label must meet before any SQL runs: present,
 * not blank, bounded in length, and free of control characters (which break logs and headers) and
 * of invisible characters: format characters (Unicode category Cf, e.g. U+200B, U+FEFF, U+00AD),
 * line and paragraph separators (Zl, Zp: U+2028, U+2029) and every space separator (Zs) other
 * than the ASCII space (U+00A0, U+3000, ...). Two keys that look the same in a log, a header or an
 * operator's query must be the same key.
 */
public final class IdempotencyKeys {
    /** Longest accepted idempotency key, in characters; the schema checks the same bound. */
    public static final int MAX_KEY_LENGTH = 255;
    /** Longest accepted tenant id, in characters; the schema checks the same bound. */
    public static final int MAX_TENANT_LENGTH = 255;

    private IdempotencyKeys() {
    }

    /** Checks {@code key} and {@code tenant}, throwing {@link InvalidIdempotencyKeyException} naming the bad one. */
    public static void validate(String key, String tenant) {
        String problem = Labels.problemWith(key, MAX_KEY_LENGTH);
        if (problem != null) {
            throw new InvalidIdempotencyKeyException("key", problem);
        }
        problem = Labels.problemWith(tenant, MAX_TENANT_LENGTH);
        if (problem != null) {
            throw new InvalidIdempotencyKeyException("tenant", problem);
        }
    }
}

package dev.idempotency.core;

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
        String problem = problemWith(key, MAX_KEY_LENGTH);
        if (problem != null) {
            throw new InvalidIdempotencyKeyException("key", problem);
        }
        problem = problemWith(tenant, MAX_TENANT_LENGTH);
        if (problem != null) {
            throw new InvalidIdempotencyKeyException("tenant", problem);
        }
    }

    /**
     * Checks any other stored label (a topic, a partition key) by the same rules, throwing
     * {@link IllegalArgumentException} that names {@code field}.
     */
    public static String requireLabel(String field, String value, int maxLength) {
        String problem = problemWith(value, maxLength);
        if (problem != null) {
            throw new IllegalArgumentException(field + " " + problem);
        }
        return value;
    }

    private static String problemWith(String value, int maxLength) {
        if (value == null) {
            return "must not be null";
        }
        if (value.isBlank()) {
            return "must not be blank";
        }
        if (value.length() > maxLength) {
            return "must be at most " + maxLength + " characters (was " + value.length() + ")";
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                return "must not contain control characters (found U+" + String.format("%04X", (int) c) + " at index " + i + ")";
            }
            int codePoint = value.codePointAt(i);
            if (invisible(codePoint)) {
                return "must not contain invisible, format or separator characters (found U+"
                        + String.format("%04X", codePoint) + " at index " + i + "); use visible characters only";
            }
            if (Character.isSurrogate(c) && !validSurrogatePair(value, i)) {
                return "must be valid UTF-16 text (unpaired surrogate at index " + i + ")";
            }
            if (Character.isHighSurrogate(c)) {
                i++;
            }
        }
        return null;
    }

    /** Format characters (Cf) and separators (Zs, Zl, Zp) other than the ASCII space. */
    private static boolean invisible(int codePoint) {
        if (codePoint == ' ') {
            return false;
        }
        int type = Character.getType(codePoint);
        return type == Character.FORMAT || type == Character.SPACE_SEPARATOR
                || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR;
    }

    private static boolean validSurrogatePair(String value, int i) {
        return Character.isHighSurrogate(value.charAt(i))
                && i + 1 < value.length()
                && Character.isLowSurrogate(value.charAt(i + 1));
    }
}

package dev.idempotency.core.internal;

/**
 * The rule every key, tenant and other stored label meets (see
 * {@link dev.idempotency.core.IdempotencyKeys}): present, not blank, bounded, no control and no
 * invisible characters. Not API.
 */
public final class Labels {
    private Labels() {
    }

    /**
     * Checks a stored label (a topic, a partition key, a consumer name) by the rules keys meet,
     * throwing {@link IllegalArgumentException} that names {@code field}; returns the value.
     */
    public static String requireLabel(String field, String value, int maxLength) {
        String problem = problemWith(value, maxLength);
        if (problem != null) {
            throw new IllegalArgumentException(field + " " + problem);
        }
        return value;
    }

    /** What is wrong with {@code value}, as the end of a sentence naming the field, or null if nothing. */
    public static String problemWith(String value, int maxLength) {
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

package dev.idempotency.http;

/** The RFC 9110 token rule, for header names and methods. */
final class HttpTokens {
    private static final String SPECIALS = "!#$%&'*+-.^_`|~";

    private HttpTokens() {
    }

    static boolean isToken(String s) {
        if (s == null || s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            if (!alnum && SPECIALS.indexOf(c) < 0) {
                return false;
            }
        }
        return true;
    }
}

package dev.idempotency.console;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * The console's own CSRF token: drawn once per console, carried by every form, and required back by
 * every POST whatever protection the host adds; comparisons take constant time.
 */
final class ConsoleCsrf {
    /** The form field that carries it. */
    static final String FIELD = "csrf";

    private final byte[] token;

    ConsoleCsrf() {
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        this.token = Base64.getUrlEncoder().withoutPadding().encodeToString(random).getBytes(StandardCharsets.US_ASCII);
    }

    /** The token the console's forms carry. */
    String token() {
        return new String(token, StandardCharsets.US_ASCII);
    }

    /** Whether a POST sent the token back. */
    boolean matches(String sent) {
        return sent != null && MessageDigest.isEqual(token, sent.getBytes(StandardCharsets.UTF_8));
    }
}

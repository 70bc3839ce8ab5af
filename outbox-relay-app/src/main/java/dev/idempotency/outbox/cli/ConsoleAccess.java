package dev.idempotency.outbox.cli;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Optional;

/**
 * Who may use the console. With credentials, a request must carry them (HTTP Basic) and is answered
 * 401 otherwise; without, the console is only served on loopback ({@link ConsoleOptions}) and its user
 * is {@value #LOCAL_USER}; comparisons take constant time. Without credentials, a request must also
 * name a loopback host in its Host header, so that a web page whose name an attacker re-points at
 * 127.0.0.1 (DNS rebinding) cannot read the console nor its CSRF token (which the console checks itself).
 */
final class ConsoleAccess {
    /** The user actions are logged under when the console asks for no credentials. */
    static final String LOCAL_USER = "local";

    private final String user;
    private final byte[] expectedAuthorization;

    private ConsoleAccess(String user, String password) {
        this.user = user;
        this.expectedAuthorization = user == null ? null : ("Basic " + Base64.getEncoder().encodeToString(
                (user + ":" + password).getBytes(StandardCharsets.UTF_8))).getBytes(StandardCharsets.UTF_8);
    }

    /** Anyone who reaches the server is {@value #LOCAL_USER}. */
    static ConsoleAccess loopbackOnly() {
        return new ConsoleAccess(null, null);
    }

    /** Requests must carry {@code user} and {@code password} (HTTP Basic). */
    static ConsoleAccess withCredentials(String user, String password) {
        return new ConsoleAccess(user, password);
    }

    /** The user a request with this Authorization header acts as; empty when it must be refused (401). */
    Optional<String> userFor(String authorizationHeader) {
        if (expectedAuthorization == null) {
            return Optional.of(LOCAL_USER);
        }
        byte[] given = authorizationHeader == null ? new byte[0] : authorizationHeader.getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(expectedAuthorization, given) ? Optional.of(user) : Optional.empty();
    }

    /**
     * Whether a request with this Host header may be served: always with credentials; without, only when
     * it names localhost or a loopback address literal (127.x.x.x, [::1]).
     */
    boolean hostAllowed(String hostHeader) {
        if (expectedAuthorization != null) {
            return true;
        }
        if (hostHeader == null) {
            return false;
        }
        String host = hostHeader.strip().toLowerCase(java.util.Locale.ROOT);
        if (host.startsWith("[")) {
            int end = host.indexOf(']');
            return end > 0 && host.substring(1, end).equals("::1");
        }
        int colon = host.indexOf(':');
        String name = colon < 0 ? host : host.substring(0, colon);
        return name.equals("localhost") || name.matches("127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");
    }
}

package dev.idempotency.spring.boot.console;

import dev.idempotency.console.OutboxConsole;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.security.web.csrf.CsrfToken;

/** Spring Security's CSRF token of a request, as its filter leaves it; loaded only where Spring Security is. */
final class SecurityCsrf {
    private SecurityCsrf() {
    }

    /** The token the application's CSRF filter expects back from a form, or null when it set none. */
    static OutboxConsole.HostCsrf of(HttpServletRequest request) {
        Object token = request.getAttribute(CsrfToken.class.getName());
        return token instanceof CsrfToken csrf ? new OutboxConsole.HostCsrf(csrf.getParameterName(), csrf.getToken()) : null;
    }
}
